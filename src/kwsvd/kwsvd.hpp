#pragma once
// kwsvd: batched SVD of small and medium matrices on Kokkos. The public API.

#include "kwsvd/api/batched_gram.hpp"
#include "kwsvd/api/batched_gram_evd.hpp"
#include "kwsvd/api/batched_small_svd.hpp"
#include "kwsvd/api/batched_svd.hpp"
#include "kwsvd/api/configuration.hpp"
#include "kwsvd/api/errors.hpp"
#include "kwsvd/api/options.hpp"
#include "kwsvd/api/variable_batched_svd.hpp"
#include "kwsvd/tuning/tailoring_plan.hpp"
#include "kwsvd/version.hpp"
