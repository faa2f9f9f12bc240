#pragma once
// One element of the wide round step (Accumulation::kFloat64, kFloat64Feedback, kFloat64State on
// float32 buffers), shared by the CPU back end's loop and the CUDA back end's kernel so that both
// compute the same float64 expression and round at the same two places (x, and obs / the
// feedback where the rows are float32). Plain C++ for the host compiler; nvcc sees it as
// __host__ __device__.
//
//   tmp = y_prev - e_back + feedback_in          (float64; a null pointer reads as zero)
//   obs = tmp                                     (rounded to S)
//   x   = fl32(e_now + tmp)                       (the packet: the only rounding on the wire)
//   feedback_out = feedback_in + (x - (e_now + tmp))
//
// The rounding x - (e_now + tmp) is exact in float64 (|x - sum| <= ulp32(sum) / 2, Sterbenz);
// stored as float32 (S = float) it is rounded by a relative 2^-24 of an error already ~2^-24 of x.
// S is the type of the workspace rows: float, or double for kFloat64State, where nothing but x
// and the decoded result is rounded. Element i reads every input before it writes any output,
// so obs may alias y_prev and feedback_out feedback_in elementwise.
#include <cstddef>

#if defined(__CUDACC__)
#define CERAR_HOST_DEVICE __host__ __device__
#else
#define CERAR_HOST_DEVICE
#endif

namespace cerar::detail {

template <typename S>
CERAR_HOST_DEVICE inline void WideStepAt(const S* e_now, const float* y_prev, const S* e_back,
                                         const S* feedback_in, float* x, S* obs, S* feedback_out,
                                         std::size_t i) {
  const double fed = feedback_in ? double(feedback_in[i]) : 0.0;
  const double tmp =
      (y_prev ? double(y_prev[i]) : 0.0) - (e_back ? double(e_back[i]) : 0.0) + fed;
  const double sum = (e_now ? double(e_now[i]) : 0.0) + tmp;
  if (obs) obs[i] = static_cast<S>(tmp);
  if (x) {
    const float packet = static_cast<float>(sum);
    x[i] = packet;
    if (feedback_out) feedback_out[i] = static_cast<S>(fed + (double(packet) - sum));
  }
}

}  // namespace cerar::detail
