// SPDX-License-Identifier: BSD-3-Clause
// Shared-memory loads and stores by 32-bit shared-space address (ld.shared / st.shared, PTX ISA
// 9.7.9.8-9): an address held in one register, offsets applied by integer arithmetic, where a
// generic pointer would take two registers (the sm90 kernel's epilogue, inside_lines; the decode
// kernel's fp8 B fragments, decode.cuh).
#pragma once
#include <cstdint>

namespace spmma::ptx {

__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

__device__ __forceinline__ uint2 ld_shared_v2(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ void st_shared_v2(uint32_t addr, uint32_t a, uint32_t b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(a), "r"(b) : "memory");
}

}  // namespace spmma::ptx
