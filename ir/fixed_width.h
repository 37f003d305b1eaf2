// The fixed-width integer types, for headers that host C++ and the NVRTC-compiled CUDA kernels
// both include (quant/block_layout.h, backends/sampling_params.h, ...): NVRTC compiles the
// kernels without the standard headers, so there they are declared here.
#pragma once

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <cstdint>
#endif
