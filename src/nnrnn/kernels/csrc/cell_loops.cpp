// The time loops of the gated and oscillator cells (GRU, coRNN, LEM), of the complex nnRNN and of the LRU's and
// minGRU's elementwise linear recurrences, forward and hand-written backward, each the whole sequence in one call:
// the same design as recurrence_loops.cpp (whose module registers these).  The
// input projection of every step is one product done by the caller; each step here is the cell's recurrent
// product (oneDNN's small-GEMM micro-kernel, or torch's multithreaded addmm for large steps) and its pointwise
// part, written as plain loops over rows (σ and tanh below).
//
// What a forward saves for its backward is what the backward cannot get from the states: the gates (GRU:
// r, z, the recurrent part of n, n; coRNN: the drive tanh(·); LEM: its two sigmoids and two tanh).  The backward
// writes ∂L/∂(input projection) of every step, from which the caller makes every weight gradient as one product
// over all steps (nnrnn/models/fused_cells.py, where the formulas are).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUBlas.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/from_blob.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace {

// At and above this many multiply-adds a step's product goes to torch's addmm (MKL, multithreaded) when torch
// has more than one thread; below it the micro-kernel on one thread, which costs far less per call.
constexpr int64_t THREADED_WORK = int64_t(1) << 21;

template <typename T> constexpr at::ScalarType scalar_type();
template <> constexpr at::ScalarType scalar_type<float>() { return at::kFloat; }
template <> constexpr at::ScalarType scalar_type<double>() { return at::kDouble; }

template <typename T>
inline at::Tensor block(T* p, int64_t rows, int64_t cols, int64_t ld) {
  return at::from_blob(p, {rows, cols}, {ld, 1}, scalar_type<T>());
}

// c (rows × cols, ld ldc) += a (rows × k, ld lda) · b (k × cols, ld ldb), all row-major.  Float64 (which the
// models never run here: it is for the tests' gradcheck of the same loops) always by torch's addmm.
template <typename T>
void gemm_acc(int64_t rows, int64_t cols, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
              T* c, int64_t ldc) {
  if (std::is_same_v<T, double> || (rows * cols * k >= THREADED_WORK && at::get_num_threads() > 1)) {
    block(c, rows, cols, ldc)
        .addmm_(block(const_cast<T*>(a), rows, k, lda), block(const_cast<T*>(b), k, cols, ldb));
    return;
  }
  if constexpr (std::is_same_v<T, float>)
    at::native::cpublas::brgemm(rows, cols, k, lda, ldb, ldc, /*add_C=*/true, a, b, c, /*is_vnni=*/false);
}

template <typename T>
void release() {
  if constexpr (std::is_same_v<T, float>) at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

// σ and tanh in place on `count` consecutive values.  Float32: the Cephes library's expf and tanhf (range reduction
// and a polynomial; relative error a few units in the last place), written branch-free so that GCC vectorises
// the loops, and compiled for AVX-512, AVX2 and plain x86-64, the one the CPU has chosen at load time
// (target_clones): the binary stays portable (no -march) and a step's σ and tanh cost no ATen dispatch, which
// was most of a small step's forward (docs/performance.md, 'Gated and oscillator cells').  NaN stays NaN.
// Float64 (the tests' gradcheck) by std::exp and std::tanh.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define NNRNN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NNRNN_CLONES
#endif

inline float exp_approx(float x) {
  const float clamped = std::min(std::max(x, -87.3f), 88.3f);  // NaN passes through both
  const float fx = __builtin_floorf(clamped * 1.44269504088896341f + 0.5f);
  float r = clamped - fx * 0.693359375f;
  r = r + fx * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.f;
  const int32_t bits = (static_cast<int32_t>(fx) + 127) << 23;  // 2^fx, fx in [-126, 127]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

NNRNN_CLONES void sigmoid_values(float* __restrict x, int64_t count) {
  for (int64_t j = 0; j < count; ++j) x[j] = 1.f / (1.f + exp_approx(-x[j]));
}

NNRNN_CLONES void tanh_values(float* __restrict x, int64_t count) {
  for (int64_t j = 0; j < count; ++j) {
    const float v = x[j], z = v * v, a = std::fabs(v);
    const float small =
        ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
         3.33332819422e-1f) * z * v + v;
    const float large = std::copysign(1.f - 2.f / (exp_approx(2.f * a) + 1.f), v);
    x[j] = a < 0.625f ? small : large;
  }
}

void sigmoid_values(double* x, int64_t count) {
  for (int64_t j = 0; j < count; ++j) x[j] = 1.0 / (1.0 + std::exp(-x[j]));
}

void tanh_values(double* x, int64_t count) {
  for (int64_t j = 0; j < count; ++j) x[j] = std::tanh(x[j]);
}

// σ or tanh in place on rows × cols of a block with leading dimension ld
template <typename T>
void sigmoid_block(T* p, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) sigmoid_values(p + r * ld, cols);
}

template <typename T>
void tanh_block(T* p, int64_t rows, int64_t cols, int64_t ld) {
  if (cols == ld) {
    tanh_values(p, rows * cols);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) tanh_values(p + r * ld, cols);
}

template <typename T>
void check(const at::Tensor& t, const char* name, std::initializer_list<int64_t> sizes) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == scalar_type<T>() && t.is_contiguous(), name,
              " must be a contiguous CPU tensor of ", scalar_type<T>());
  TORCH_CHECK(t.sizes() == at::IntArrayRef(sizes), name, " has shape ", t.sizes(), ", expected ",
              at::IntArrayRef(sizes));
}

}  // namespace

// ------------------------------------------------------------------------------------------------ GRU
// xp (T, B, 3N): W_ih x_t + b_ih.  h (T, B, N) receives h_t; gates (T, B, 4N) receives [r, z, W_hn h + b_hn, n].
// wt = W_hhᵀ (N, 3N); bias = b_hh (3N) or empty.
template <typename T>
void gru_forward_impl(const at::Tensor& xp, const at::Tensor& h0, const at::Tensor& wt, const at::Tensor& bias,
                      at::Tensor h, at::Tensor gates) {
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  check<T>(xp, "xp", {steps, batch, 3 * n});
  check<T>(h0, "h0", {batch, n});
  check<T>(wt, "wt", {n, 3 * n});
  check<T>(h, "h", {steps, batch, n});
  check<T>(gates, "gates", {steps, batch, 4 * n});
  const T* b = bias.numel() ? bias.data_ptr<T>() : nullptr;
  if (b) check<T>(bias, "bias", {3 * n});
  const T* w = wt.data_ptr<T>();
  const T* prev = h0.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    const T* x = xp.data_ptr<T>() + t * batch * 3 * n;
    T* g = gates.data_ptr<T>() + t * batch * 4 * n;
    T* out = h.data_ptr<T>() + t * batch * n;
    for (int64_t r = 0; r < batch; ++r) {
      T* row = g + r * 4 * n;
      if (b) std::copy(b, b + 3 * n, row); else std::fill(row, row + 3 * n, T(0));
    }
    gemm_acc<T>(batch, 3 * n, n, prev, n, w, 3 * n, g, 4 * n);  // [W_hr h, W_hz h, W_hn h] + b_hh
    for (int64_t r = 0; r < batch; ++r) {
      T* __restrict row = g + r * 4 * n;
      const T* __restrict xr = x + r * 3 * n;
      for (int64_t j = 0; j < 2 * n; ++j) row[j] = xr[j] + row[j];
    }
    sigmoid_block<T>(g, batch, 2 * n, 4 * n);
    for (int64_t r = 0; r < batch; ++r) {
      T* __restrict row = g + r * 4 * n;
      const T* __restrict xr = x + r * 3 * n;
      for (int64_t j = 0; j < n; ++j) row[3 * n + j] = xr[2 * n + j] + row[j] * row[2 * n + j];
    }
    tanh_block<T>(g + 3 * n, batch, n, 4 * n);
    for (int64_t r = 0; r < batch; ++r) {
      const T* __restrict row = g + r * 4 * n;
      const T* __restrict hp = prev + r * n;
      T* __restrict hr = out + r * n;
      for (int64_t j = 0; j < n; ++j) {
        const T z = row[n + j], nn = row[3 * n + j];
        hr[j] = (T(1) - z) * nn + z * hp[j];
      }
    }
    prev = out;
  }
  release<T>();
}

// From grad_h = ∂L/∂h_t (T, B, N): dxp (T, B, 3N) = ∂L/∂(W_ih x_t + b_ih), da (T, B, 3N) = ∂L/∂(W_hh h_{t-1} +
// b_hh), and carry (B, N, zeroed) = ∂L/∂h_0.  w = W_hh (3N, N).
template <typename T>
void gru_backward_impl(const at::Tensor& grad_h, const at::Tensor& h, const at::Tensor& h0, const at::Tensor& gates,
                       const at::Tensor& w, at::Tensor dxp, at::Tensor da, at::Tensor carry) {
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  check<T>(grad_h, "grad_h", {steps, batch, n});
  check<T>(h, "h", {steps, batch, n});
  check<T>(h0, "h0", {batch, n});
  check<T>(gates, "gates", {steps, batch, 4 * n});
  check<T>(w, "w", {3 * n, n});
  check<T>(dxp, "dxp", {steps, batch, 3 * n});
  check<T>(da, "da", {steps, batch, 3 * n});
  check<T>(carry, "carry", {batch, n});
  T* c = carry.data_ptr<T>();
  for (int64_t t = steps - 1; t >= 0; --t) {
    const T* gh = grad_h.data_ptr<T>() + t * batch * n;
    const T* g = gates.data_ptr<T>() + t * batch * 4 * n;
    const T* prev = t ? h.data_ptr<T>() + (t - 1) * batch * n : h0.data_ptr<T>();
    T* dx = dxp.data_ptr<T>() + t * batch * 3 * n;
    T* dr = da.data_ptr<T>() + t * batch * 3 * n;
    for (int64_t b = 0; b < batch; ++b) {
      const T* __restrict row = g + b * 4 * n;
      const T* __restrict hp = prev + b * n;
      const T* __restrict ghr = gh + b * n;
      T* __restrict cr = c + b * n;
      T* __restrict dxr = dx + b * 3 * n;
      T* __restrict dar = dr + b * 3 * n;
      for (int64_t j = 0; j < n; ++j) {
        const T r = row[j], z = row[n + j], an = row[2 * n + j], nn = row[3 * n + j];
        const T dh = ghr[j] + cr[j];
        const T dn = dh * (T(1) - z) * (T(1) - nn * nn);  // ∂L/∂(pre-activation of n)
        const T dz = dh * (hp[j] - nn) * z * (T(1) - z);
        const T drr = dn * an * r * (T(1) - r);
        dxr[j] = drr;
        dxr[n + j] = dz;
        dxr[2 * n + j] = dn;
        dar[j] = drr;
        dar[n + j] = dz;
        dar[2 * n + j] = dn * r;
        cr[j] = dh * z;
      }
    }
    gemm_acc<T>(batch, n, 3 * n, dr, 3 * n, w.data_ptr<T>(), n, c, n);  // + da_t W_hh
  }
  release<T>();
}

// ------------------------------------------------------------------------------------------------ coRNN
// drive (T, B, N): V u_t + b on entry, tanh(V u_t + b + W_hh [y, z]_{t-1}) on exit.  s (T, B, 2N) receives
// [y_t, z_t]; s0 (B, 2N); wt = W_hhᵀ (2N, N).
template <typename T>
void cornn_forward_impl(at::Tensor drive, const at::Tensor& s0, const at::Tensor& wt, at::Tensor s, double dt,
                        double gamma, double epsilon, bool implicit) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check<T>(drive, "drive", {steps, batch, n});
  check<T>(s0, "s0", {batch, 2 * n});
  check<T>(wt, "wt", {2 * n, n});
  check<T>(s, "s", {steps, batch, 2 * n});
  const T fdt = dt, fgamma = gamma, fepsilon = epsilon, scale = 1.0 + dt * epsilon;
  const T* prev = s0.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    T* d = drive.data_ptr<T>() + t * batch * n;
    T* out = s.data_ptr<T>() + t * batch * 2 * n;
    gemm_acc<T>(batch, n, 2 * n, prev, 2 * n, wt.data_ptr<T>(), n, d, n);
    tanh_block<T>(d, batch, n, n);
    for (int64_t b = 0; b < batch; ++b) {
      const T* __restrict dr = d + b * n;
      const T* __restrict y = prev + b * 2 * n;
      const T* __restrict z = y + n;
      T* __restrict yo = out + b * 2 * n;
      T* __restrict zo = yo + n;
      for (int64_t j = 0; j < n; ++j) {
        // in the reference's order of operations (nnrnn/models/cornn.py)
        const T zn = implicit ? (z[j] + fdt * (dr[j] - fgamma * y[j])) / scale
                                  : z[j] + fdt * (dr[j] - fgamma * y[j] - fepsilon * z[j]);
        zo[j] = zn;
        yo[j] = y[j] + fdt * zn;
      }
    }
    prev = out;
  }
  release<T>();
}

// From grad_s = ∂L/∂[y_t, z_t] (T, B, 2N) and the forward's drive: dpre (T, B, N) = ∂L/∂(pre-activation of the
// drive), carry (B, 2N, zeroed) = ∂L/∂[y_0, z_0].  w = W_hh (N, 2N).
template <typename T>
void cornn_backward_impl(const at::Tensor& grad_s, const at::Tensor& drive, const at::Tensor& w, at::Tensor dpre,
                         at::Tensor carry, double dt, double gamma, double epsilon, bool implicit) {
  const int64_t steps = drive.size(0), batch = drive.size(1), n = drive.size(2);
  check<T>(grad_s, "grad_s", {steps, batch, 2 * n});
  check<T>(w, "w", {n, 2 * n});
  check<T>(dpre, "dpre", {steps, batch, n});
  check<T>(carry, "carry", {batch, 2 * n});
  const T fdt = dt, fgamma = gamma, keep_z = implicit ? 1.0 : 1.0 - dt * epsilon;
  const T inverse = implicit ? 1.0 / (1.0 + dt * epsilon) : 1.0;
  T* c = carry.data_ptr<T>();
  for (int64_t t = steps - 1; t >= 0; --t) {
    const T* gs = grad_s.data_ptr<T>() + t * batch * 2 * n;
    const T* d = drive.data_ptr<T>() + t * batch * n;
    T* dp = dpre.data_ptr<T>() + t * batch * n;
    for (int64_t b = 0; b < batch; ++b) {
      const T* __restrict gy = gs + b * 2 * n;
      const T* __restrict gz = gy + n;
      const T* __restrict dr = d + b * n;
      T* __restrict cy = c + b * 2 * n;
      T* __restrict cz = cy + n;
      T* __restrict dpr = dp + b * n;
      for (int64_t j = 0; j < n; ++j) {
        const T dy = gy[j] + cy[j];
        // y_t = y + Δt z_t, then z_t's own formula: ∂L/∂(z_t's numerator), divided by 1 + Δt ε if implicit
        const T dz = (gz[j] + cz[j] + fdt * dy) * inverse;
        dpr[j] = fdt * dz * (T(1) - dr[j] * dr[j]);
        cy[j] = dy - fdt * fgamma * dz;
        cz[j] = keep_z * dz;
      }
    }
    gemm_acc<T>(batch, 2 * n, n, dp, n, w.data_ptr<T>(), 2 * n, c, 2 * n);  // + dpre_t W_hh
  }
  release<T>();
}

// ------------------------------------------------------------------------------------------------ LEM
// gates (T, B, 4N): W_ih u_t + b ([gate y, gate z, drive y, drive z]) on entry, [σ_y, σ_z, tanh_y, tanh_z] on
// exit.  s (T, B, 2N) receives [y_t, z_t]; s0 (B, 2N); wt_hh = W_hhᵀ (N, 3N); wt_zy = W_zyᵀ (N, N).
template <typename T>
void lem_forward_impl(at::Tensor gates, const at::Tensor& s0, const at::Tensor& wt_hh, const at::Tensor& wt_zy,
                      at::Tensor s, double dt) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check<T>(gates, "gates", {steps, batch, 4 * n});
  check<T>(s0, "s0", {batch, 2 * n});
  check<T>(wt_hh, "wt_hh", {n, 3 * n});
  check<T>(wt_zy, "wt_zy", {n, n});
  check<T>(s, "s", {steps, batch, 2 * n});
  const T fdt = dt;
  const T* whh = wt_hh.data_ptr<T>();
  const T* prev = s0.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    T* g = gates.data_ptr<T>() + t * batch * 4 * n;
    T* out = s.data_ptr<T>() + t * batch * 2 * n;
    gemm_acc<T>(batch, 2 * n, n, prev, 2 * n, whh, 3 * n, g, 4 * n);                  // + [W_2; W_1] y
    gemm_acc<T>(batch, n, n, prev, 2 * n, whh + 2 * n, 3 * n, g + 3 * n, 4 * n);      // + W_z y
    sigmoid_block<T>(g, batch, 2 * n, 4 * n);
    tanh_block<T>(g + 3 * n, batch, n, 4 * n);
    for (int64_t b = 0; b < batch; ++b) {
      const T* __restrict row = g + b * 4 * n;
      const T* __restrict z = prev + b * 2 * n + n;
      T* __restrict zo = out + b * 2 * n + n;
      for (int64_t j = 0; j < n; ++j) {
        const T dtz = fdt * row[n + j];
        zo[j] = (T(1) - dtz) * z[j] + dtz * row[3 * n + j];
      }
    }
    gemm_acc<T>(batch, n, n, out + n, 2 * n, wt_zy.data_ptr<T>(), n, g + 2 * n, 4 * n);  // + W_y z_t
    tanh_block<T>(g + 2 * n, batch, n, 4 * n);
    for (int64_t b = 0; b < batch; ++b) {
      const T* __restrict row = g + b * 4 * n;
      const T* __restrict y = prev + b * 2 * n;
      T* __restrict yo = out + b * 2 * n;
      for (int64_t j = 0; j < n; ++j) {
        const T dty = fdt * row[j];
        yo[j] = (T(1) - dty) * y[j] + dty * row[2 * n + j];
      }
    }
    prev = out;
  }
  release<T>();
}

// From grad_s = ∂L/∂[y_t, z_t] (T, B, 2N), the states s and the forward's gates: dxp (T, B, 4N) = ∂L/∂(W_ih u_t
// + b), carry (B, 2N, zeroed) = ∂L/∂[y_0, z_0].  w_hh = W_hh (3N, N), w_zy = W_zy (N, N).
template <typename T>
void lem_backward_impl(const at::Tensor& grad_s, const at::Tensor& s, const at::Tensor& s0, const at::Tensor& gates,
                       const at::Tensor& w_hh, const at::Tensor& w_zy, at::Tensor dxp, at::Tensor carry, double dt) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check<T>(grad_s, "grad_s", {steps, batch, 2 * n});
  check<T>(s0, "s0", {batch, 2 * n});
  check<T>(gates, "gates", {steps, batch, 4 * n});
  check<T>(w_hh, "w_hh", {3 * n, n});
  check<T>(w_zy, "w_zy", {n, n});
  check<T>(dxp, "dxp", {steps, batch, 4 * n});
  check<T>(carry, "carry", {batch, 2 * n});
  const T fdt = dt;
  const T* whh = w_hh.data_ptr<T>();
  T* c = carry.data_ptr<T>();
  for (int64_t t = steps - 1; t >= 0; --t) {
    const T* gs = grad_s.data_ptr<T>() + t * batch * 2 * n;
    const T* g = gates.data_ptr<T>() + t * batch * 4 * n;
    const T* prev = t ? s.data_ptr<T>() + (t - 1) * batch * 2 * n : s0.data_ptr<T>();
    T* dx = dxp.data_ptr<T>() + t * batch * 4 * n;
    for (int64_t b = 0; b < batch; ++b) {  // y_t = (1 - Δt σ_y) y + Δt σ_y tanh_y
      const T* __restrict row = g + b * 4 * n;
      const T* __restrict gy = gs + b * 2 * n;
      const T* __restrict gz = gy + n;
      const T* __restrict y = prev + b * 2 * n;
      T* __restrict cy = c + b * 2 * n;
      T* __restrict cz = cy + n;
      T* __restrict dxr = dx + b * 4 * n;
      for (int64_t j = 0; j < n; ++j) {
        const T sy = row[j], ty = row[2 * n + j], dty = fdt * sy;
        const T dy = gy[j] + cy[j];
        dxr[2 * n + j] = dy * dty * (T(1) - ty * ty);
        dxr[j] = dy * (ty - y[j]) * fdt * sy * (T(1) - sy);
        cy[j] = dy * (T(1) - dty);
        cz[j] = gz[j] + cz[j];
      }
    }
    gemm_acc<T>(batch, n, n, dx + 2 * n, 4 * n, w_zy.data_ptr<T>(), n, c + n, 2 * n);  // ∂L/∂z_t += (y's drive) W_y
    for (int64_t b = 0; b < batch; ++b) {  // z_t = (1 - Δt σ_z) z + Δt σ_z tanh_z
      const T* __restrict row = g + b * 4 * n;
      const T* __restrict z = prev + b * 2 * n + n;
      T* __restrict cz = c + b * 2 * n + n;
      T* __restrict dxr = dx + b * 4 * n;
      for (int64_t j = 0; j < n; ++j) {
        const T sz = row[n + j], tz = row[3 * n + j], dtz = fdt * sz;
        const T dz = cz[j];
        dxr[3 * n + j] = dz * dtz * (T(1) - tz * tz);
        dxr[n + j] = dz * (tz - z[j]) * fdt * sz * (T(1) - sz);
        cz[j] = dz * (T(1) - dtz);
      }
    }
    gemm_acc<T>(batch, n, 2 * n, dx, 4 * n, whh, n, c, 2 * n);                      // + [dgate_y, dgate_z] [W_2; W_1]
    gemm_acc<T>(batch, n, n, dx + 3 * n, 4 * n, whh + 2 * n * n, n, c, 2 * n);      // + ddrive_z W_z
  }
  release<T>();
}


// ------------------------------------------------------------------------------------------------ complex nnRNN
// In its real 2N form: the state row [Re h, Im h], the product h Vᵀ = [a, b] M with M = [[C, D], [−D, C]], C + iD = Vᵀ,
// and modReLU per unit, φ(z) = z/|z| · relu(|z| + b) on the pair (Re z_j, Im z_j), φ(0) = 0.
// h (T, B, 2N): [Re, Im] of W_ih x_t + b on entry, h_t on exit; h0 (B, 2N); m = M (2N, 2N); bias (N) or empty.
template <typename T>
void complex_forward_impl(at::Tensor h, const at::Tensor& h0, const at::Tensor& m, const at::Tensor& bias) {
  const int64_t steps = h.size(0), batch = h.size(1), width = h.size(2), n = width / 2;
  check<T>(h, "h", {steps, batch, 2 * n});
  check<T>(h0, "h0", {batch, 2 * n});
  check<T>(m, "m", {2 * n, 2 * n});
  const T* b = bias.numel() ? bias.data_ptr<T>() : nullptr;
  if (b) check<T>(bias, "bias", {n});
  const T* prev = h0.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    T* cur = h.data_ptr<T>() + t * batch * 2 * n;
    gemm_acc<T>(batch, 2 * n, 2 * n, prev, 2 * n, m.data_ptr<T>(), 2 * n, cur, 2 * n);
    if (b) {
      for (int64_t r = 0; r < batch; ++r) {
        T* __restrict re = cur + r * 2 * n;
        T* __restrict im = re + n;
        for (int64_t j = 0; j < n; ++j) {
          const T size = std::sqrt(re[j] * re[j] + im[j] * im[j]);
          const T scale = size > T(0) ? std::max(size + b[j], T(0)) / size : T(0);
          re[j] *= scale;
          im[j] *= scale;
        }
      }
    }
    prev = cur;
  }
  release<T>();
}

// g (T, B, 2N) receives ∂L/∂z_t from grad_h = ∂L/∂h_t and h; v = Mᵀ (2N, 2N), contiguous; bias (N) or empty; a
// non-empty bias_grad (N, zeroed) receives Σ ∂L/∂b.  modReLU's Jacobian from h = φ(z), per unit: for h ≠ 0,
// s = |h|, u = h/s, |z| = s − b, ∂h/∂z = (1 + b/|z|) I − (b/|z|) u uᵀ and ∂h/∂b = u; for h = 0 both 0.
template <typename T>
void complex_backward_impl(at::Tensor g, const at::Tensor& grad_h, const at::Tensor& h, const at::Tensor& v,
                           const at::Tensor& bias, at::Tensor bias_grad) {
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2) / 2;
  check<T>(g, "g", {steps, batch, 2 * n});
  check<T>(grad_h, "grad_h", {steps, batch, 2 * n});
  check<T>(h, "h", {steps, batch, 2 * n});
  check<T>(v, "v", {2 * n, 2 * n});
  const T* b = bias.numel() ? bias.data_ptr<T>() : nullptr;
  if (b) check<T>(bias, "bias", {n});
  T* bg = bias_grad.numel() ? bias_grad.data_ptr<T>() : nullptr;
  if (bg) check<T>(bias_grad, "bias_grad", {n});
  const int64_t size = batch * 2 * n;
  for (int64_t t = steps - 1; t >= 0; --t) {
    T* cur = g.data_ptr<T>() + t * size;
    const T* incoming = grad_h.data_ptr<T>() + t * size;
    std::copy(incoming, incoming + size, cur);
    if (t + 1 < steps) gemm_acc<T>(batch, 2 * n, 2 * n, cur + size, 2 * n, v.data_ptr<T>(), 2 * n, cur, 2 * n);
    if (!b) continue;
    const T* hs = h.data_ptr<T>() + t * size;
    for (int64_t r = 0; r < batch; ++r) {
      T* __restrict gre = cur + r * 2 * n;
      T* __restrict gim = gre + n;
      const T* __restrict hre = hs + r * 2 * n;
      const T* __restrict him = hre + n;
      for (int64_t j = 0; j < n; ++j) {
        const T s = std::sqrt(hre[j] * hre[j] + him[j] * him[j]);
        const bool alive = s > T(0);
        const T ure = alive ? hre[j] / s : T(0), uim = alive ? him[j] / s : T(0);
        const T ug = ure * gre[j] + uim * gim[j];
        const T ratio = alive ? b[j] / (s - b[j]) : T(0);
        const T keep = alive ? ratio + T(1) : T(0);
        gre[j] = gre[j] * keep - ure * (ratio * ug);
        gim[j] = gim[j] * keep - uim * (ratio * ug);
        if (bg) bg[j] += ug;
      }
    }
  }
  release<T>();
}

// ------------------------------------------------------------------------------------------------ linear recurrences
// The elementwise linear recurrences of the LRU and minGRU (minGRU's with its σ and g), whose steps are a few
// multiply-adds per unit: run from Python, a step is a handful of ATen calls on a (B × N) block, and the parallel
// scans' log₂ T levels each a dozen more, which at the memory grid's sizes (B = 16, N = 10–33) were most of those models' updates.  Here every step
// is one pass over the block, forward and backward (nnrnn/models/fused_cells.py has the formulas).

// The LRU's s_t = λ s_{t−1} + b_t in real arithmetic, λ = lr + i·li constant (N), the state rows [Re s | Im s]:
// b (T, B, 2N), s0 (B, 2N) → s (T, B, 2N).  In the reference's order of operations (nnrnn/models/lru.py, lru_loop).
template <typename T>
void diagonal_forward_impl(const at::Tensor& b, const at::Tensor& s0, const at::Tensor& lr, const at::Tensor& li,
                           at::Tensor s) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check<T>(b, "b", {steps, batch, 2 * n});
  check<T>(s0, "s0", {batch, 2 * n});
  check<T>(lr, "lr", {n});
  check<T>(li, "li", {n});
  check<T>(s, "s", {steps, batch, 2 * n});
  const T* __restrict re_l = lr.data_ptr<T>();
  const T* __restrict im_l = li.data_ptr<T>();
  const T* prev = s0.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    const T* bt = b.data_ptr<T>() + t * batch * 2 * n;
    T* out = s.data_ptr<T>() + t * batch * 2 * n;
    for (int64_t r = 0; r < batch; ++r) {
      const T* __restrict pr = prev + r * 2 * n;
      const T* __restrict pi = pr + n;
      const T* __restrict br = bt + r * 2 * n;
      const T* __restrict bi = br + n;
      T* __restrict sr = out + r * 2 * n;
      T* __restrict si = sr + n;
      for (int64_t j = 0; j < n; ++j) {
        const T ar = pr[j], ai = pi[j];
        sr[j] = re_l[j] * ar - im_l[j] * ai + br[j];
        si[j] = re_l[j] * ai + im_l[j] * ar + bi[j];
      }
    }
    prev = out;
  }
}

// From grad_s = ∂L/∂s_t (T, B, 2N): grad_b (T, B, 2N) = G_t, G_t = ∂L/∂s_t + conj(λ) G_{t+1} (as [Re | Im]);
// grad_s0 (B, 2N) = conj(λ) G_0; grad_lambda (2N, zeroed) += Σ_{t,b} G_t conj(s_{t−1}) as [Re | Im], summed in
// double (T·B terms per unit).
template <typename T>
void diagonal_backward_impl(const at::Tensor& grad_s, const at::Tensor& s, const at::Tensor& s0, const at::Tensor& lr,
                            const at::Tensor& li, at::Tensor grad_b, at::Tensor grad_s0, at::Tensor grad_lambda) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check<T>(grad_s, "grad_s", {steps, batch, 2 * n});
  check<T>(s0, "s0", {batch, 2 * n});
  check<T>(lr, "lr", {n});
  check<T>(li, "li", {n});
  check<T>(grad_b, "grad_b", {steps, batch, 2 * n});
  check<T>(grad_s0, "grad_s0", {batch, 2 * n});
  check<T>(grad_lambda, "grad_lambda", {2 * n});
  const T* __restrict re_l = lr.data_ptr<T>();
  const T* __restrict im_l = li.data_ptr<T>();
  std::vector<double> sum(2 * n, 0.0);
  double* __restrict sum_r = sum.data();
  double* __restrict sum_i = sum_r + n;
  const int64_t size = batch * 2 * n;
  for (int64_t t = steps - 1; t >= 0; --t) {
    const T* gs = grad_s.data_ptr<T>() + t * size;
    const T* prev = t ? s.data_ptr<T>() + (t - 1) * size : s0.data_ptr<T>();
    T* g = grad_b.data_ptr<T>() + t * size;
    const T* next = t + 1 < steps ? g + size : nullptr;
    for (int64_t r = 0; r < batch; ++r) {
      const T* __restrict gr_in = gs + r * 2 * n;
      const T* __restrict gi_in = gr_in + n;
      const T* __restrict pr = prev + r * 2 * n;
      const T* __restrict pi = pr + n;
      T* __restrict gr = g + r * 2 * n;
      T* __restrict gi = gr + n;
      if (next) {
        const T* __restrict nr = next + r * 2 * n;
        const T* __restrict ni = nr + n;
        for (int64_t j = 0; j < n; ++j) {
          gr[j] = gr_in[j] + (re_l[j] * nr[j] + im_l[j] * ni[j]);
          gi[j] = gi_in[j] + (re_l[j] * ni[j] - im_l[j] * nr[j]);
        }
      } else {
        for (int64_t j = 0; j < n; ++j) {
          gr[j] = gr_in[j];
          gi[j] = gi_in[j];
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        sum_r[j] += double(gr[j]) * pr[j] + double(gi[j]) * pi[j];
        sum_i[j] += double(gi[j]) * pr[j] - double(gr[j]) * pi[j];
      }
    }
  }
  T* d0 = grad_s0.data_ptr<T>();
  const T* g0 = grad_b.data_ptr<T>();
  for (int64_t r = 0; r < (steps ? batch : 0); ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const T gr = g0[r * 2 * n + j], gi = g0[r * 2 * n + n + j];
      d0[r * 2 * n + j] = re_l[j] * gr + im_l[j] * gi;
      d0[r * 2 * n + n + j] = re_l[j] * gi - im_l[j] * gr;
    }
  }
  T* dl = grad_lambda.data_ptr<T>();
  for (int64_t j = 0; j < 2 * n; ++j) dl[j] += T(sum[j]);
}

// minGRU: z_t = σ(gate_t), τ_t = g(k_t) (k + ½ for k ≥ 0, σ(k) below), h_t = (1 − z_t) h_{t−1} + z_t τ_t (+ noise_t),
// in the reference's order of operations (nnrnn/models/mingru.py, mingru_loop).  gate, k (T, B, N), h0 (B, N), noise
// (T, B, N) or empty → z, tau, h (T, B, N); σ and g over all steps first, in one vectorised pass each.
template <typename T>
void mingru_forward_impl(const at::Tensor& gate, const at::Tensor& k, const at::Tensor& h0, const at::Tensor& noise,
                         at::Tensor z, at::Tensor tau, at::Tensor h) {
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  check<T>(gate, "gate", {steps, batch, n});
  check<T>(k, "k", {steps, batch, n});
  check<T>(h0, "h0", {batch, n});
  check<T>(z, "z", {steps, batch, n});
  check<T>(tau, "tau", {steps, batch, n});
  const T* e = noise.numel() ? noise.data_ptr<T>() : nullptr;
  if (e) check<T>(noise, "noise", {steps, batch, n});
  const int64_t size = batch * n, total = steps * size;
  T* __restrict zs = z.data_ptr<T>();
  T* __restrict ts = tau.data_ptr<T>();
  const T* __restrict ks = k.data_ptr<T>();
  std::copy(gate.data_ptr<T>(), gate.data_ptr<T>() + total, zs);
  sigmoid_values(zs, total);
  std::copy(ks, ks + total, ts);
  sigmoid_values(ts, total);
  for (int64_t j = 0; j < total; ++j) ts[j] = ks[j] >= T(0) ? ks[j] + T(0.5) : ts[j];
  const T* prev = h0.data_ptr<T>();
  for (int64_t t = 0; t < steps; ++t) {
    const T* __restrict zt = zs + t * size;
    const T* __restrict tt = ts + t * size;
    const T* __restrict p = prev;
    T* __restrict out = h.data_ptr<T>() + t * size;
    for (int64_t j = 0; j < size; ++j) out[j] = (T(1) - zt[j]) * p[j] + zt[j] * tt[j];
    if (e) {
      const T* __restrict et = e + t * size;
      for (int64_t j = 0; j < size; ++j) out[j] = out[j] + et[j];
    }
    prev = out;
  }
}

// From grad_h = ∂L/∂h_t: grad_noise (T, B, N) = G_t = ∂L/∂h_t + (1 − z_{t+1}) G_{t+1}; grad_gate = G_t (τ_t − h_{t−1})
// z_t (1 − z_t); grad_k = G_t z_t g'(k_t), g' = 1 for k ≥ 0 and τ (1 − τ) below; grad_h0 (B, N) = (1 − z_0) G_0.
template <typename T>
void mingru_backward_impl(const at::Tensor& grad_h, const at::Tensor& z, const at::Tensor& tau, const at::Tensor& k,
                          const at::Tensor& h, const at::Tensor& h0, at::Tensor grad_gate, at::Tensor grad_k,
                          at::Tensor grad_noise, at::Tensor grad_h0) {
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  check<T>(grad_h, "grad_h", {steps, batch, n});
  check<T>(z, "z", {steps, batch, n});
  check<T>(tau, "tau", {steps, batch, n});
  check<T>(k, "k", {steps, batch, n});
  check<T>(h0, "h0", {batch, n});
  check<T>(grad_gate, "grad_gate", {steps, batch, n});
  check<T>(grad_k, "grad_k", {steps, batch, n});
  check<T>(grad_noise, "grad_noise", {steps, batch, n});
  check<T>(grad_h0, "grad_h0", {batch, n});
  const int64_t size = batch * n;
  for (int64_t t = steps - 1; t >= 0; --t) {
    const T* __restrict gh = grad_h.data_ptr<T>() + t * size;
    const T* __restrict zt = z.data_ptr<T>() + t * size;
    const T* __restrict tt = tau.data_ptr<T>() + t * size;
    const T* __restrict kt = k.data_ptr<T>() + t * size;
    const T* __restrict prev = t ? h.data_ptr<T>() + (t - 1) * size : h0.data_ptr<T>();
    T* __restrict g = grad_noise.data_ptr<T>() + t * size;
    T* __restrict dg = grad_gate.data_ptr<T>() + t * size;
    T* __restrict dk = grad_k.data_ptr<T>() + t * size;
    if (t + 1 < steps) {
      const T* __restrict next = g + size;
      const T* __restrict zn = z.data_ptr<T>() + (t + 1) * size;
      for (int64_t j = 0; j < size; ++j) g[j] = gh[j] + (T(1) - zn[j]) * next[j];
    } else {
      std::copy(gh, gh + size, g);
    }
    for (int64_t j = 0; j < size; ++j) {
      const T zj = zt[j], tj = tt[j];
      dg[j] = g[j] * (tj - prev[j]) * zj * (T(1) - zj);
      dk[j] = g[j] * zj * (kt[j] >= T(0) ? T(1) : tj * (T(1) - tj));
    }
  }
  T* __restrict d0 = grad_h0.data_ptr<T>();
  const T* __restrict z0 = z.data_ptr<T>();
  const T* __restrict g0 = grad_noise.data_ptr<T>();
  for (int64_t j = 0; j < (steps ? size : 0); ++j) d0[j] = (T(1) - z0[j]) * g0[j];
}

// float32 (what the models run) or float64 (the tests' gradcheck), by the dtype of the first tensor
void gru_forward(const at::Tensor& xp, const at::Tensor& h0, const at::Tensor& wt, const at::Tensor& bias,
                 at::Tensor h, at::Tensor gates) {
  if (xp.scalar_type() == at::kDouble) gru_forward_impl<double>(xp, h0, wt, bias, h, gates);
  else gru_forward_impl<float>(xp, h0, wt, bias, h, gates);
}

void gru_backward(const at::Tensor& grad_h, const at::Tensor& h, const at::Tensor& h0, const at::Tensor& gates,
                  const at::Tensor& w, at::Tensor dxp, at::Tensor da, at::Tensor carry) {
  if (grad_h.scalar_type() == at::kDouble) gru_backward_impl<double>(grad_h, h, h0, gates, w, dxp, da, carry);
  else gru_backward_impl<float>(grad_h, h, h0, gates, w, dxp, da, carry);
}

void cornn_forward(at::Tensor drive, const at::Tensor& s0, const at::Tensor& wt, at::Tensor s, double dt,
                   double gamma, double epsilon, bool implicit) {
  if (drive.scalar_type() == at::kDouble) cornn_forward_impl<double>(drive, s0, wt, s, dt, gamma, epsilon, implicit);
  else cornn_forward_impl<float>(drive, s0, wt, s, dt, gamma, epsilon, implicit);
}

void cornn_backward(const at::Tensor& grad_s, const at::Tensor& drive, const at::Tensor& w, at::Tensor dpre,
                    at::Tensor carry, double dt, double gamma, double epsilon, bool implicit) {
  if (grad_s.scalar_type() == at::kDouble) cornn_backward_impl<double>(
      grad_s, drive, w, dpre, carry, dt, gamma, epsilon, implicit);
  else cornn_backward_impl<float>(grad_s, drive, w, dpre, carry, dt, gamma, epsilon, implicit);
}

void lem_forward(at::Tensor gates, const at::Tensor& s0, const at::Tensor& wt_hh, const at::Tensor& wt_zy,
                 at::Tensor s, double dt) {
  if (gates.scalar_type() == at::kDouble) lem_forward_impl<double>(gates, s0, wt_hh, wt_zy, s, dt);
  else lem_forward_impl<float>(gates, s0, wt_hh, wt_zy, s, dt);
}

void lem_backward(const at::Tensor& grad_s, const at::Tensor& s, const at::Tensor& s0, const at::Tensor& gates,
                  const at::Tensor& w_hh, const at::Tensor& w_zy, at::Tensor dxp, at::Tensor carry, double dt) {
  if (grad_s.scalar_type() == at::kDouble) lem_backward_impl<double>(
      grad_s, s, s0, gates, w_hh, w_zy, dxp, carry, dt);
  else lem_backward_impl<float>(grad_s, s, s0, gates, w_hh, w_zy, dxp, carry, dt);
}

void complex_forward(at::Tensor h, const at::Tensor& h0, const at::Tensor& m, const at::Tensor& bias) {
  if (h.scalar_type() == at::kDouble) complex_forward_impl<double>(h, h0, m, bias);
  else complex_forward_impl<float>(h, h0, m, bias);
}

void complex_backward(at::Tensor g, const at::Tensor& grad_h, const at::Tensor& h, const at::Tensor& v,
                      const at::Tensor& bias, at::Tensor bias_grad) {
  if (g.scalar_type() == at::kDouble) complex_backward_impl<double>(g, grad_h, h, v, bias, bias_grad);
  else complex_backward_impl<float>(g, grad_h, h, v, bias, bias_grad);
}

void diagonal_forward(const at::Tensor& b, const at::Tensor& s0, const at::Tensor& lr, const at::Tensor& li,
                      at::Tensor s) {
  if (b.scalar_type() == at::kDouble) diagonal_forward_impl<double>(b, s0, lr, li, s);
  else diagonal_forward_impl<float>(b, s0, lr, li, s);
}

void diagonal_backward(const at::Tensor& grad_s, const at::Tensor& s, const at::Tensor& s0, const at::Tensor& lr,
                       const at::Tensor& li, at::Tensor grad_b, at::Tensor grad_s0, at::Tensor grad_lambda) {
  if (grad_s.scalar_type() == at::kDouble) diagonal_backward_impl<double>(
      grad_s, s, s0, lr, li, grad_b, grad_s0, grad_lambda);
  else diagonal_backward_impl<float>(grad_s, s, s0, lr, li, grad_b, grad_s0, grad_lambda);
}

void mingru_forward(const at::Tensor& gate, const at::Tensor& k, const at::Tensor& h0, const at::Tensor& noise,
                    at::Tensor z, at::Tensor tau, at::Tensor h) {
  if (gate.scalar_type() == at::kDouble) mingru_forward_impl<double>(gate, k, h0, noise, z, tau, h);
  else mingru_forward_impl<float>(gate, k, h0, noise, z, tau, h);
}

void mingru_backward(const at::Tensor& grad_h, const at::Tensor& z, const at::Tensor& tau, const at::Tensor& k,
                     const at::Tensor& h, const at::Tensor& h0, at::Tensor grad_gate, at::Tensor grad_k,
                     at::Tensor grad_noise, at::Tensor grad_h0) {
  if (grad_h.scalar_type() == at::kDouble) mingru_backward_impl<double>(
      grad_h, z, tau, k, h, h0, grad_gate, grad_k, grad_noise, grad_h0);
  else mingru_backward_impl<float>(grad_h, z, tau, k, h, h0, grad_gate, grad_k, grad_noise, grad_h0);
}

void register_cell_loops(pybind11::module& m) {
  m.def("diagonal_forward", &diagonal_forward, "the LRU's s_t = λ s_{t-1} + b_t over all steps, on [Re s, Im s]");
  m.def("diagonal_backward", &diagonal_backward, "the LRU's linear recurrence's backward over all steps");
  m.def("mingru_forward", &mingru_forward, "minGRU's gates and h_t = (1 - z_t) h_{t-1} + z_t g(k_t) over all steps");
  m.def("mingru_backward", &mingru_backward, "minGRU's backward over all steps");
  m.def("complex_forward", &complex_forward, "the complex nnRNN's forward over all steps, in its real 2N form");
  m.def("complex_backward", &complex_backward, "the complex nnRNN's backward over all steps");
  m.def("gru_forward", &gru_forward, "the GRU's forward over all steps (nnrnn/models/fused_cells.py)");
  m.def("gru_backward", &gru_backward, "the GRU's backward over all steps");
  m.def("cornn_forward", &cornn_forward, "coRNN's forward over all steps");
  m.def("cornn_backward", &cornn_backward, "coRNN's backward over all steps");
  m.def("lem_forward", &lem_forward, "LEM's forward over all steps");
  m.def("lem_backward", &lem_backward, "LEM's backward over all steps");
}
