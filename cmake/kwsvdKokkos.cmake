# Helpers shared by kwsvd's own build and by its installed package config
# (kwsvdConfig.cmake includes this file), so a consumer gets the same fixes.

# Remove interface include directories that do not exist from Kokkos' imported
# targets. Debian's Trilinos 13.2 packages export Kokkos::kokkos with
# INTERFACE_INCLUDE_DIRECTORIES "/usr/lib/include" (computed one level too high);
# CMake refuses to use an imported target that names a missing directory. The
# real headers are in Kokkos_INCLUDE_DIRS, which that config also sets.
function(kwsvd_sanitize_kokkos_targets)
  foreach(tgt IN ITEMS Kokkos::kokkos Kokkos::kokkoscore Kokkos::kokkoscontainers
                       Kokkos::kokkosalgorithms trilinos_kokkoscore)
    if(NOT TARGET ${tgt})
      continue()
    endif()
    get_target_property(_aliased ${tgt} ALIASED_TARGET)
    if(_aliased)
      continue()
    endif()
    get_target_property(_dirs ${tgt} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_kept "")
    set(_dropped FALSE)
    foreach(_d IN LISTS _dirs)
      if(_d MATCHES "^\\$<" OR EXISTS "${_d}")
        list(APPEND _kept "${_d}")
      else()
        set(_dropped TRUE)
        message(STATUS "kwsvd: ignoring non-existent include directory '${_d}' of ${tgt}")
      endif()
    endforeach()
    if(_dropped)
      foreach(_d IN LISTS Kokkos_INCLUDE_DIRS)
        get_filename_component(_d "${_d}" ABSOLUTE)
        if(EXISTS "${_d}")
          list(APPEND _kept "${_d}")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _kept)
      set_property(TARGET ${tgt} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
    endif()
  endforeach()
endfunction()

# The C++ standard kwsvd is compiled with: whatever Kokkos was built with
# (Kokkos 4+ exports Kokkos_CXX_STANDARD), at least 17.
function(kwsvd_kokkos_cxx_standard out_var)
  set(_std 17)
  if(DEFINED Kokkos_CXX_STANDARD AND Kokkos_CXX_STANDARD MATCHES "^[0-9]+$")
    if(Kokkos_CXX_STANDARD GREATER _std)
      set(_std ${Kokkos_CXX_STANDARD})
    endif()
  endif()
  set(${out_var} ${_std} PARENT_SCOPE)
endfunction()

# Compile the sources of `target` the way Kokkos compiles its own. With a Kokkos
# built as a CMake language (Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE, exported as
# Kokkos_COMPILE_LANGUAGE = CUDA or HIP) our .cpp files must be compiled as that
# language. CMake 3.25 knows no -std flag for nvcc beyond C++17 and may omit the
# flag when it believes the compiler's default suffices; nvcc 13 defaults to
# C++17, so a C++20 Kokkos would fail. We therefore pass -std explicitly when
# CMake has no option for the standard.
function(kwsvd_compile_like_kokkos target)
  kwsvd_kokkos_cxx_standard(_std)
  target_compile_features(${target} PUBLIC cxx_std_${_std})
  if(DEFINED Kokkos_COMPILE_LANGUAGE AND Kokkos_COMPILE_LANGUAGE MATCHES "^(CUDA|HIP)$")
    set(_lang ${Kokkos_COMPILE_LANGUAGE})
    get_target_property(_srcs ${target} SOURCES)
    foreach(_s IN LISTS _srcs)
      if(_s MATCHES "\\.(cpp|cc|cxx)$")
        set_source_files_properties(${_s} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE ${_lang})
      endif()
    endforeach()
    if(CMAKE_${_lang}${_std}_STANDARD_COMPILE_OPTION)
      set_property(TARGET ${target} PROPERTY ${_lang}_STANDARD ${_std})
      set_property(TARGET ${target} PROPERTY ${_lang}_STANDARD_REQUIRED ON)
    else()
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:${_lang}>:-std=c++${_std}>)
    endif()
  endif()
endfunction()
