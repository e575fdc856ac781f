// SPDX-License-Identifier: BSD-3-Clause
// SPMMA_HD marks a function compiled for the host and, under nvcc, for the device too: one
// definition of a rule that both sides apply (never two copies).
#pragma once

#if defined(__CUDACC__)
#define SPMMA_HD __host__ __device__
#else
#define SPMMA_HD
#endif
