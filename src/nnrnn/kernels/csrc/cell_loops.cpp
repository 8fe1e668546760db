// The time loops of the gated and oscillator cells (GRU, coRNN, LEM), forward and hand-written backward, each
// the whole sequence in one call: the same design as recurrence_loops.cpp (whose module registers these).  The
// input projection of every step is one product done by the caller; each step here is the cell's recurrent
// product (oneDNN's small-GEMM micro-kernel, or torch's multithreaded addmm for large steps) and its pointwise
// part, written as plain loops over rows, with σ and tanh by ATen's vectorised kernels on the step's block.
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
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tanh.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>

namespace {

// At and above this many multiply-adds a step's product goes to torch's addmm (MKL, multithreaded) when torch
// has more than one thread; below it the micro-kernel on one thread, which costs far less per call.
constexpr int64_t THREADED_WORK = int64_t(1) << 21;

// c (rows × cols, ld ldc) += a (rows × k, ld lda) · b (k × cols, ld ldb), all row-major float32.
void gemm_acc(int64_t rows, int64_t cols, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
              float* c, int64_t ldc) {
  if (rows * cols * k >= THREADED_WORK && at::get_num_threads() > 1) {
    auto ct = at::from_blob(c, {rows, cols}, {ldc, 1}, at::kFloat);
    ct.addmm_(at::from_blob(const_cast<float*>(a), {rows, k}, {lda, 1}, at::kFloat),
              at::from_blob(const_cast<float*>(b), {k, cols}, {ldb, 1}, at::kFloat));
    return;
  }
  at::native::cpublas::brgemm(rows, cols, k, lda, ldb, ldc, /*add_C=*/true, a, b, c, /*is_vnni=*/false);
}

inline at::Tensor block(float* p, int64_t rows, int64_t cols, int64_t ld) {
  return at::from_blob(p, {rows, cols}, {ld, 1}, at::kFloat);
}

void check(const at::Tensor& t, const char* name, std::initializer_list<int64_t> sizes) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous(), name,
              " must be a contiguous float32 CPU tensor");
  TORCH_CHECK(t.sizes() == at::IntArrayRef(sizes), name, " has shape ", t.sizes(), ", expected ",
              at::IntArrayRef(sizes));
}

}  // namespace

// ------------------------------------------------------------------------------------------------ GRU
// xp (T, B, 3N): W_ih x_t + b_ih.  h (T, B, N) receives h_t; gates (T, B, 4N) receives [r, z, W_hn h + b_hn, n].
// wt = W_hhᵀ (N, 3N); bias = b_hh (3N) or empty.
void gru_forward(const at::Tensor& xp, const at::Tensor& h0, const at::Tensor& wt, const at::Tensor& bias,
                 at::Tensor h, at::Tensor gates) {
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  check(xp, "xp", {steps, batch, 3 * n});
  check(h0, "h0", {batch, n});
  check(wt, "wt", {n, 3 * n});
  check(h, "h", {steps, batch, n});
  check(gates, "gates", {steps, batch, 4 * n});
  const float* b = bias.numel() ? bias.data_ptr<float>() : nullptr;
  if (b) check(bias, "bias", {3 * n});
  const float* w = wt.data_ptr<float>();
  const float* prev = h0.data_ptr<float>();
  for (int64_t t = 0; t < steps; ++t) {
    const float* x = xp.data_ptr<float>() + t * batch * 3 * n;
    float* g = gates.data_ptr<float>() + t * batch * 4 * n;
    float* out = h.data_ptr<float>() + t * batch * n;
    for (int64_t r = 0; r < batch; ++r) {
      float* row = g + r * 4 * n;
      if (b) std::copy(b, b + 3 * n, row); else std::fill(row, row + 3 * n, 0.f);
    }
    gemm_acc(batch, 3 * n, n, prev, n, w, 3 * n, g, 4 * n);  // [W_hr h, W_hz h, W_hn h] + b_hh
    for (int64_t r = 0; r < batch; ++r) {
      float* __restrict row = g + r * 4 * n;
      const float* __restrict xr = x + r * 3 * n;
      for (int64_t j = 0; j < 2 * n; ++j) row[j] = xr[j] + row[j];
    }
    block(g, batch, 2 * n, 4 * n).sigmoid_();
    for (int64_t r = 0; r < batch; ++r) {
      float* __restrict row = g + r * 4 * n;
      const float* __restrict xr = x + r * 3 * n;
      for (int64_t j = 0; j < n; ++j) row[3 * n + j] = xr[2 * n + j] + row[j] * row[2 * n + j];
    }
    block(g + 3 * n, batch, n, 4 * n).tanh_();
    for (int64_t r = 0; r < batch; ++r) {
      const float* __restrict row = g + r * 4 * n;
      const float* __restrict hp = prev + r * n;
      float* __restrict hr = out + r * n;
      for (int64_t j = 0; j < n; ++j) {
        const float z = row[n + j], nn = row[3 * n + j];
        hr[j] = (1.f - z) * nn + z * hp[j];
      }
    }
    prev = out;
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

// From grad_h = ∂L/∂h_t (T, B, N): dxp (T, B, 3N) = ∂L/∂(W_ih x_t + b_ih), da (T, B, 3N) = ∂L/∂(W_hh h_{t-1} +
// b_hh), and carry (B, N, zeroed) = ∂L/∂h_0.  w = W_hh (3N, N).
void gru_backward(const at::Tensor& grad_h, const at::Tensor& h, const at::Tensor& h0, const at::Tensor& gates,
                  const at::Tensor& w, at::Tensor dxp, at::Tensor da, at::Tensor carry) {
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  check(grad_h, "grad_h", {steps, batch, n});
  check(h, "h", {steps, batch, n});
  check(h0, "h0", {batch, n});
  check(gates, "gates", {steps, batch, 4 * n});
  check(w, "w", {3 * n, n});
  check(dxp, "dxp", {steps, batch, 3 * n});
  check(da, "da", {steps, batch, 3 * n});
  check(carry, "carry", {batch, n});
  float* c = carry.data_ptr<float>();
  for (int64_t t = steps - 1; t >= 0; --t) {
    const float* gh = grad_h.data_ptr<float>() + t * batch * n;
    const float* g = gates.data_ptr<float>() + t * batch * 4 * n;
    const float* prev = t ? h.data_ptr<float>() + (t - 1) * batch * n : h0.data_ptr<float>();
    float* dx = dxp.data_ptr<float>() + t * batch * 3 * n;
    float* dr = da.data_ptr<float>() + t * batch * 3 * n;
    for (int64_t b = 0; b < batch; ++b) {
      const float* __restrict row = g + b * 4 * n;
      const float* __restrict hp = prev + b * n;
      const float* __restrict ghr = gh + b * n;
      float* __restrict cr = c + b * n;
      float* __restrict dxr = dx + b * 3 * n;
      float* __restrict dar = dr + b * 3 * n;
      for (int64_t j = 0; j < n; ++j) {
        const float r = row[j], z = row[n + j], an = row[2 * n + j], nn = row[3 * n + j];
        const float dh = ghr[j] + cr[j];
        const float dn = dh * (1.f - z) * (1.f - nn * nn);  // ∂L/∂(pre-activation of n)
        const float dz = dh * (hp[j] - nn) * z * (1.f - z);
        const float drr = dn * an * r * (1.f - r);
        dxr[j] = drr;
        dxr[n + j] = dz;
        dxr[2 * n + j] = dn;
        dar[j] = drr;
        dar[n + j] = dz;
        dar[2 * n + j] = dn * r;
        cr[j] = dh * z;
      }
    }
    gemm_acc(batch, n, 3 * n, dr, 3 * n, w.data_ptr<float>(), n, c, n);  // + da_t W_hh
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

// ------------------------------------------------------------------------------------------------ coRNN
// drive (T, B, N): V u_t + b on entry, tanh(V u_t + b + W_hh [y, z]_{t-1}) on exit.  s (T, B, 2N) receives
// [y_t, z_t]; s0 (B, 2N); wt = W_hhᵀ (2N, N).
void cornn_forward(at::Tensor drive, const at::Tensor& s0, const at::Tensor& wt, at::Tensor s, double dt,
                   double gamma, double epsilon, bool implicit) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check(drive, "drive", {steps, batch, n});
  check(s0, "s0", {batch, 2 * n});
  check(wt, "wt", {2 * n, n});
  check(s, "s", {steps, batch, 2 * n});
  const float fdt = dt, fgamma = gamma, fepsilon = epsilon, scale = 1.0 + dt * epsilon;
  const float* prev = s0.data_ptr<float>();
  for (int64_t t = 0; t < steps; ++t) {
    float* d = drive.data_ptr<float>() + t * batch * n;
    float* out = s.data_ptr<float>() + t * batch * 2 * n;
    gemm_acc(batch, n, 2 * n, prev, 2 * n, wt.data_ptr<float>(), n, d, n);
    block(d, batch, n, n).tanh_();
    for (int64_t b = 0; b < batch; ++b) {
      const float* __restrict dr = d + b * n;
      const float* __restrict y = prev + b * 2 * n;
      const float* __restrict z = y + n;
      float* __restrict yo = out + b * 2 * n;
      float* __restrict zo = yo + n;
      for (int64_t j = 0; j < n; ++j) {
        // in the reference's order of operations (nnrnn/models/cornn.py)
        const float zn = implicit ? (z[j] + fdt * (dr[j] - fgamma * y[j])) / scale
                                  : z[j] + fdt * (dr[j] - fgamma * y[j] - fepsilon * z[j]);
        zo[j] = zn;
        yo[j] = y[j] + fdt * zn;
      }
    }
    prev = out;
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

// From grad_s = ∂L/∂[y_t, z_t] (T, B, 2N) and the forward's drive: dpre (T, B, N) = ∂L/∂(pre-activation of the
// drive), carry (B, 2N, zeroed) = ∂L/∂[y_0, z_0].  w = W_hh (N, 2N).
void cornn_backward(const at::Tensor& grad_s, const at::Tensor& drive, const at::Tensor& w, at::Tensor dpre,
                    at::Tensor carry, double dt, double gamma, double epsilon, bool implicit) {
  const int64_t steps = drive.size(0), batch = drive.size(1), n = drive.size(2);
  check(grad_s, "grad_s", {steps, batch, 2 * n});
  check(w, "w", {n, 2 * n});
  check(dpre, "dpre", {steps, batch, n});
  check(carry, "carry", {batch, 2 * n});
  const float fdt = dt, fgamma = gamma, keep_z = implicit ? 1.0 : 1.0 - dt * epsilon;
  const float inverse = implicit ? 1.0 / (1.0 + dt * epsilon) : 1.0;
  float* c = carry.data_ptr<float>();
  for (int64_t t = steps - 1; t >= 0; --t) {
    const float* gs = grad_s.data_ptr<float>() + t * batch * 2 * n;
    const float* d = drive.data_ptr<float>() + t * batch * n;
    float* dp = dpre.data_ptr<float>() + t * batch * n;
    for (int64_t b = 0; b < batch; ++b) {
      const float* __restrict gy = gs + b * 2 * n;
      const float* __restrict gz = gy + n;
      const float* __restrict dr = d + b * n;
      float* __restrict cy = c + b * 2 * n;
      float* __restrict cz = cy + n;
      float* __restrict dpr = dp + b * n;
      for (int64_t j = 0; j < n; ++j) {
        const float dy = gy[j] + cy[j];
        // y_t = y + Δt z_t, then z_t's own formula: ∂L/∂(z_t's numerator), divided by 1 + Δt ε if implicit
        const float dz = (gz[j] + cz[j] + fdt * dy) * inverse;
        dpr[j] = fdt * dz * (1.f - dr[j] * dr[j]);
        cy[j] = dy - fdt * fgamma * dz;
        cz[j] = keep_z * dz;
      }
    }
    gemm_acc(batch, 2 * n, n, dp, n, w.data_ptr<float>(), 2 * n, c, 2 * n);  // + dpre_t W_hh
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

// ------------------------------------------------------------------------------------------------ LEM
// gates (T, B, 4N): W_ih u_t + b ([gate y, gate z, drive y, drive z]) on entry, [σ_y, σ_z, tanh_y, tanh_z] on
// exit.  s (T, B, 2N) receives [y_t, z_t]; s0 (B, 2N); wt_hh = W_hhᵀ (N, 3N); wt_zy = W_zyᵀ (N, N).
void lem_forward(at::Tensor gates, const at::Tensor& s0, const at::Tensor& wt_hh, const at::Tensor& wt_zy,
                 at::Tensor s, double dt) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check(gates, "gates", {steps, batch, 4 * n});
  check(s0, "s0", {batch, 2 * n});
  check(wt_hh, "wt_hh", {n, 3 * n});
  check(wt_zy, "wt_zy", {n, n});
  check(s, "s", {steps, batch, 2 * n});
  const float fdt = dt;
  const float* whh = wt_hh.data_ptr<float>();
  const float* prev = s0.data_ptr<float>();
  for (int64_t t = 0; t < steps; ++t) {
    float* g = gates.data_ptr<float>() + t * batch * 4 * n;
    float* out = s.data_ptr<float>() + t * batch * 2 * n;
    gemm_acc(batch, 2 * n, n, prev, 2 * n, whh, 3 * n, g, 4 * n);                  // + [W_2; W_1] y
    gemm_acc(batch, n, n, prev, 2 * n, whh + 2 * n, 3 * n, g + 3 * n, 4 * n);      // + W_z y
    block(g, batch, 2 * n, 4 * n).sigmoid_();
    block(g + 3 * n, batch, n, 4 * n).tanh_();
    for (int64_t b = 0; b < batch; ++b) {
      const float* __restrict row = g + b * 4 * n;
      const float* __restrict z = prev + b * 2 * n + n;
      float* __restrict zo = out + b * 2 * n + n;
      for (int64_t j = 0; j < n; ++j) {
        const float dtz = fdt * row[n + j];
        zo[j] = (1.f - dtz) * z[j] + dtz * row[3 * n + j];
      }
    }
    gemm_acc(batch, n, n, out + n, 2 * n, wt_zy.data_ptr<float>(), n, g + 2 * n, 4 * n);  // + W_y z_t
    block(g + 2 * n, batch, n, 4 * n).tanh_();
    for (int64_t b = 0; b < batch; ++b) {
      const float* __restrict row = g + b * 4 * n;
      const float* __restrict y = prev + b * 2 * n;
      float* __restrict yo = out + b * 2 * n;
      for (int64_t j = 0; j < n; ++j) {
        const float dty = fdt * row[j];
        yo[j] = (1.f - dty) * y[j] + dty * row[2 * n + j];
      }
    }
    prev = out;
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

// From grad_s = ∂L/∂[y_t, z_t] (T, B, 2N), the states s and the forward's gates: dxp (T, B, 4N) = ∂L/∂(W_ih u_t
// + b), carry (B, 2N, zeroed) = ∂L/∂[y_0, z_0].  w_hh = W_hh (3N, N), w_zy = W_zy (N, N).
void lem_backward(const at::Tensor& grad_s, const at::Tensor& s, const at::Tensor& s0, const at::Tensor& gates,
                  const at::Tensor& w_hh, const at::Tensor& w_zy, at::Tensor dxp, at::Tensor carry, double dt) {
  const int64_t steps = s.size(0), batch = s.size(1), n = s.size(2) / 2;
  check(grad_s, "grad_s", {steps, batch, 2 * n});
  check(s0, "s0", {batch, 2 * n});
  check(gates, "gates", {steps, batch, 4 * n});
  check(w_hh, "w_hh", {3 * n, n});
  check(w_zy, "w_zy", {n, n});
  check(dxp, "dxp", {steps, batch, 4 * n});
  check(carry, "carry", {batch, 2 * n});
  const float fdt = dt;
  const float* whh = w_hh.data_ptr<float>();
  float* c = carry.data_ptr<float>();
  for (int64_t t = steps - 1; t >= 0; --t) {
    const float* gs = grad_s.data_ptr<float>() + t * batch * 2 * n;
    const float* g = gates.data_ptr<float>() + t * batch * 4 * n;
    const float* prev = t ? s.data_ptr<float>() + (t - 1) * batch * 2 * n : s0.data_ptr<float>();
    float* dx = dxp.data_ptr<float>() + t * batch * 4 * n;
    for (int64_t b = 0; b < batch; ++b) {  // y_t = (1 - Δt σ_y) y + Δt σ_y tanh_y
      const float* __restrict row = g + b * 4 * n;
      const float* __restrict gy = gs + b * 2 * n;
      const float* __restrict gz = gy + n;
      const float* __restrict y = prev + b * 2 * n;
      float* __restrict cy = c + b * 2 * n;
      float* __restrict cz = cy + n;
      float* __restrict dxr = dx + b * 4 * n;
      for (int64_t j = 0; j < n; ++j) {
        const float sy = row[j], ty = row[2 * n + j], dty = fdt * sy;
        const float dy = gy[j] + cy[j];
        dxr[2 * n + j] = dy * dty * (1.f - ty * ty);
        dxr[j] = dy * (ty - y[j]) * fdt * sy * (1.f - sy);
        cy[j] = dy * (1.f - dty);
        cz[j] = gz[j] + cz[j];
      }
    }
    gemm_acc(batch, n, n, dx + 2 * n, 4 * n, w_zy.data_ptr<float>(), n, c + n, 2 * n);  // ∂L/∂z_t += (y's drive) W_y
    for (int64_t b = 0; b < batch; ++b) {  // z_t = (1 - Δt σ_z) z + Δt σ_z tanh_z
      const float* __restrict row = g + b * 4 * n;
      const float* __restrict z = prev + b * 2 * n + n;
      float* __restrict cz = c + b * 2 * n + n;
      float* __restrict dxr = dx + b * 4 * n;
      for (int64_t j = 0; j < n; ++j) {
        const float sz = row[n + j], tz = row[3 * n + j], dtz = fdt * sz;
        const float dz = cz[j];
        dxr[3 * n + j] = dz * dtz * (1.f - tz * tz);
        dxr[n + j] = dz * (tz - z[j]) * fdt * sz * (1.f - sz);
        cz[j] = dz * (1.f - dtz);
      }
    }
    gemm_acc(batch, n, 2 * n, dx, 4 * n, whh, n, c, 2 * n);                      // + [dgate_y, dgate_z] [W_2; W_1]
    gemm_acc(batch, n, n, dx + 3 * n, 4 * n, whh + 2 * n * n, n, c, 2 * n);      // + ddrive_z W_z
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

void register_cell_loops(pybind11::module& m) {
  m.def("gru_forward", &gru_forward, "the GRU's forward over all steps (nnrnn/models/fused_cells.py)");
  m.def("gru_backward", &gru_backward, "the GRU's backward over all steps");
  m.def("cornn_forward", &cornn_forward, "coRNN's forward over all steps");
  m.def("cornn_backward", &cornn_backward, "coRNN's backward over all steps");
  m.def("lem_forward", &lem_forward, "LEM's forward over all steps");
  m.def("lem_backward", &lem_backward, "LEM's backward over all steps");
}
