// SPDX-License-Identifier: BSD-3-Clause
// What a CUDA device can run of this build, and where a pointer lives: checked once per device
// (kernel image) or per call (pointers), so that nothing is launched that cannot run.
#pragma once
#include <cstddef>
#include <string>

namespace spmma::cuda {

// The machine code the driver loads for spmma's kernels on one device. All of spmma's CUDA
// sources are compiled for one list of architectures, so one probe kernel stands for them all.
struct KernelImage {
  bool loads = false;   // false: no image of this build runs on the device (why says so)
  int arch = 0;         // __CUDA_ARCH__ of the loaded image (e.g. 800, 890, 900): 890+ has fp8 mma.sp
  bool sm90a = false;   // the image has sm_90a's features (wgmma, setmaxnreg): the sm90 kernel runs
  std::string why;
};
// Probes `ordinal` once per process (the result is cached); the device must exist.
const KernelImage& kernel_image(int ordinal);

// Throws invalid_argument unless [p, p + bytes) is device (or managed) memory of device
// `ordinal`, inside one allocation. `what` names the argument.
void check_device_memory(const void* p, size_t bytes, int ordinal, const char* what);

}  // namespace spmma::cuda
