// SPDX-License-Identifier: BSD-3-Clause
// Programmatic dependent launch (PTX griddepcontrol, sm_90): a grid launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it in the
// stream still runs, once every CTA of that kernel has signalled launch_dependents (or exited).
// Its threads must then wait before they touch global memory: the wait returns when the kernel
// before has completed and its memory operations are visible. Both are no-ops in a grid launched
// without the attribute. The CUDA runtime's device functions, named for what they do here.
#pragma once
#include <cuda_runtime.h>

namespace spmma::ptx {

// griddepcontrol.wait: this thread waits for the grids this one depends on (their completion and
// their memory operations). A memory clobber: no load or store moves above it.
__device__ __forceinline__ void wait_prior_grids() { cudaGridDependencySynchronize(); }

// griddepcontrol.launch_dependents: the next grid in the stream may be scheduled once every CTA of
// this one has said so or exited. No memory ordering: the next grid's own wait provides that.
__device__ __forceinline__ void allow_next_grid() { cudaTriggerProgrammaticLaunchCompletion(); }

}  // namespace spmma::ptx
