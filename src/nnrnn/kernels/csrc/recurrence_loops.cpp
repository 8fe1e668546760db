// The two time loops of nnrnn.models.fused in C++, for float32 tensors on the CPU.
//
//   forward:   h[t] = φ(h[t] + h[t-1] Vᵀ)               (h[t] holds W_ih x_t + b on entry)
//   backward:  g[t] = (∂L/∂h_t + g[t+1] V) ⊙ φ'(h[t])     (g = ∂L/∂z, T × B × N)
//
// Why C++: at the copy task's sizes (B = 10, N = 128) one step's product is 0.33 MFLOP, so
// torch.mm's (MKL's sgemm) cost per call and each ATen call's dispatch dominate the step
// (docs/performance.md, 'Compiled loops'); oneDNN's batch-reduce GEMM micro-kernel, which torch
// exports as at::native::cpublas::brgemm (its CPU flash attention uses it), is faster there and is
// called here directly, followed by φ in the same pass over the step's B × N block.
// Nothing here is a hand-written GEMM: the product is oneDNN's (or, in torch builds
// without oneDNN's ukernel, torch's own cpublas fallback inside brgemm).
//
// Large steps (B·N² ≥ PARALLEL_WORK) are split by output columns over torch's intra-op
// threads, one parallel region per step.  The Python loops in fused.py remain the path
// for float64, other devices, and machines where this file does not compile.
// Only the headers needed, not torch/extension.h: that shortens the one-time compile
// (docs/performance.md, 'Compiled loops').
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUBlas.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/tanh.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <cmath>

namespace {

enum Nonlinearity : int64_t { kIdentity = 0, kRelu = 1, kTanh = 2, kModRelu = 3 };

constexpr int64_t PARALLEL_WORK = int64_t(1) << 21;  // B·N² below which one thread does the step
constexpr int64_t MIN_COLUMNS = 64;                   // narrowest column block given to a thread

// c (rows × cols, leading dimension ld) += a (rows × k, ld k) · b (k × cols, leading dimension ldb)
inline void gemm_acc(int64_t rows, int64_t cols, int64_t k, const float* a, const float* b, int64_t ldb,
                     float* c, int64_t ld) {
  at::native::cpublas::brgemm(rows, cols, k, /*ld_a=*/k, ldb, ld, /*add_C=*/true, a, b, c,
                              /*is_vnni=*/false);
}

// φ in place on rows × [c0, c1) of a row-major block with leading dimension ld.
void phi_block(float* z, int64_t rows, int64_t ld, int64_t c0, int64_t c1, int64_t kind,
               const float* bias) {
  if (kind == kTanh) {  // ATen's vectorised tanh on the block rather than a scalar std::tanh loop
    at::from_blob(z + c0, {rows, c1 - c0}, {ld, 1}, at::kFloat).tanh_();
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* row = z + r * ld;
    switch (kind) {
      case kRelu:  // max(z, 0) with NaN kept, as torch.clamp_min does
        for (int64_t j = c0; j < c1; ++j) row[j] = std::max(row[j], 0.f);
        break;
      case kModRelu:
        // sign(z)·relu(|z| + b), computed as fused.py does: |z| + b as b + sign(z)·z.  No branches, so
        // that the loop vectorises and random signs cost no mispredictions; NaN stays NaN.
        for (int64_t j = c0; j < c1; ++j) {
          const float z = row[j];
          const float s = static_cast<float>(z > 0.f) - static_cast<float>(z < 0.f);
          row[j] = std::max(bias[j] + s * z, 0.f) * s;
        }
        break;
      default:
        break;
    }
  }
}

// g ⊙ [h > 0] and g ⊙ [h ≠ 0]: a multiply by a 0/1 mask, as fused.py does (so 0 · inf gives NaN
// there too).  Written in exactly this form, restrict pointers and the mask in its own variable,
// because that is what GCC 12 vectorises: `g *= float(h > 0)` in a switch, or the select inside the
// product, compiles to a branch, which random signs mispredict (docs/performance.md, 'Compiled loops').
inline void mask_positive(float* __restrict g, const float* __restrict h, int64_t count) {
  for (int64_t j = 0; j < count; ++j) {
    const float keep = h[j] > 0.f ? 1.f : 0.f;
    g[j] *= keep;
  }
}

inline void mask_nonzero(float* __restrict g, const float* __restrict h, int64_t count) {
  for (int64_t j = 0; j < count; ++j) {
    const float keep = h[j] != 0.f ? 1.f : 0.f;
    g[j] *= keep;
  }
}

// g ⊙ [h ≠ 0], and bias_grad += g ⊙ sign(h): modReLU's ∂h/∂b = sign(z)·[|z| + b > 0], whose
// second factor the mask already applied.
inline void mask_nonzero_bias(float* __restrict g, const float* __restrict h, float* __restrict bias_grad,
                              int64_t count) {
  for (int64_t j = 0; j < count; ++j) {
    const float keep = h[j] != 0.f ? 1.f : 0.f;
    const float sign = (h[j] > 0.f ? 1.f : 0.f) - (h[j] < 0.f ? 1.f : 0.f);
    g[j] *= keep;
    bias_grad[j] += g[j] * sign;
  }
}

inline void tanh_row(float* __restrict g, const float* __restrict h, int64_t count) {
  for (int64_t j = 0; j < count; ++j) g[j] = g[j] * (1.f - h[j] * h[j]);
}

// g ⊙= φ'(z) recovered from h = φ(z), on rows × [c0, c1); for modReLU also bias_grad[c0:c1] += its
// part of Σ dz ⊙ sign(h) when bias_grad is given.
void dphi_block(float* g, const float* h, int64_t rows, int64_t ld, int64_t c0, int64_t c1,
                int64_t kind, float* bias_grad) {
  const int64_t count = c1 - c0;
  for (int64_t r = 0; r < rows; ++r) {
    float* gr = g + r * ld + c0;
    const float* hr = h + r * ld + c0;
    if (kind == kRelu) mask_positive(gr, hr, count);         // h ≥ 0: [h > 0]
    else if (kind == kModRelu && bias_grad) mask_nonzero_bias(gr, hr, bias_grad + c0, count);
    else if (kind == kModRelu) mask_nonzero(gr, hr, count);  // [h ≠ 0]
    else if (kind == kTanh) tanh_row(gr, hr, count);         // 1 - h²
  }
}

int64_t column_blocks(int64_t batch, int64_t n) {
  if (batch * n * n < PARALLEL_WORK) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n / MIN_COLUMNS));
}

// Column range [c0, c1) of block `index` of `blocks`, in multiples of 16 floats (one cache line).
inline void block_range(int64_t index, int64_t blocks, int64_t n, int64_t* c0, int64_t* c1) {
  const int64_t width = ((n + blocks - 1) / blocks + 15) / 16 * 16;
  *c0 = std::min(n, index * width);
  *c1 = std::min(n, *c0 + width);
}

void check(const at::Tensor& t, const char* name, int64_t dim) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.dim() == dim,
              name, " must be a contiguous float32 CPU tensor with ", dim, " dimensions");
}

}  // namespace

// h (T, B, N): W_ih x_t + b on entry, h_t on exit.  h0 (B, N).  vt = Vᵀ (N, N), contiguous.
void forward_loop(at::Tensor h, const at::Tensor& h0, const at::Tensor& vt, int64_t kind,
                  const at::Tensor& modrelu_bias) {
  check(h, "h", 3);
  check(h0, "h0", 2);
  check(vt, "vt", 2);
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  TORCH_CHECK(h0.size(0) == batch && h0.size(1) == n && vt.size(0) == n && vt.size(1) == n,
              "h0 and vt do not match h");
  const float* bias = nullptr;
  if (kind == kModRelu) {
    check(modrelu_bias, "modrelu_bias", 1);
    bias = modrelu_bias.data_ptr<float>();
  }
  float* out = h.data_ptr<float>();
  const float* w = vt.data_ptr<float>();
  const float* prev = h0.data_ptr<float>();
  const int64_t blocks = column_blocks(batch, n);
  for (int64_t t = 0; t < steps; ++t) {
    float* cur = out + t * batch * n;
    auto step = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        int64_t c0, c1;
        block_range(i, blocks, n, &c0, &c1);
        if (c0 == c1) continue;
        gemm_acc(batch, c1 - c0, n, prev, w + c0, n, cur + c0, n);
        phi_block(cur, batch, n, c0, c1, kind, bias);
      }
    };
    if (blocks == 1) step(0, 1); else at::parallel_for(0, blocks, 1, step);
    prev = cur;
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

// g (T, B, N) receives ∂L/∂z from grad_h = ∂L/∂h (T, B, N) and h (T, B, N); v = V (N, N).
// For modReLU, a non-empty bias_grad (N, zeroed) receives Σ_t,b dz ⊙ sign(h).
void backward_loop(at::Tensor g, const at::Tensor& grad_h, const at::Tensor& h,
                   const at::Tensor& v, int64_t kind, at::Tensor bias_grad) {
  check(g, "g", 3);
  check(grad_h, "grad_h", 3);
  check(h, "h", 3);
  check(v, "v", 2);
  const int64_t steps = h.size(0), batch = h.size(1), n = h.size(2);
  TORCH_CHECK(g.sizes() == h.sizes() && grad_h.sizes() == h.sizes() && v.size(0) == n && v.size(1) == n,
              "g, grad_h, h and v do not match");
  float* out = g.data_ptr<float>();
  const float* incoming = grad_h.data_ptr<float>();
  const float* hs = h.data_ptr<float>();
  const float* w = v.data_ptr<float>();
  float* bias_out = nullptr;
  if (kind == kModRelu && bias_grad.numel()) {
    check(bias_grad, "bias_grad", 1);
    TORCH_CHECK(bias_grad.size(0) == n, "bias_grad does not match h");
    bias_out = bias_grad.data_ptr<float>();
  }
  const int64_t blocks = column_blocks(batch, n);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const int64_t offset = t * batch * n;
    float* cur = out + offset;
    const float* later = t + 1 < steps ? out + offset + batch * n : nullptr;
    auto step = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        int64_t c0, c1;
        block_range(i, blocks, n, &c0, &c1);
        if (c0 == c1) continue;
        for (int64_t r = 0; r < batch; ++r)
          std::copy(incoming + offset + r * n + c0, incoming + offset + r * n + c1, cur + r * n + c0);
        if (later) gemm_acc(batch, c1 - c0, n, later, w + c0, n, cur + c0, n);  // + g[t+1] V
        dphi_block(cur, hs + offset, batch, n, c0, c1, kind, bias_out);
      }
    };
    if (blocks == 1) step(0, 1); else at::parallel_for(0, blocks, 1, step);
  }
  at::native::cpublas::brgemm_release(/*is_vnni=*/false);
}

void register_cell_loops(pybind11::module& m);  // cell_loops.cpp: the gated and oscillator cells' loops

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward_loop", &forward_loop, "h[t] = φ(h[t] + h[t-1] Vᵀ) for t = 0..T-1, in place");
  m.def("backward_loop", &backward_loop,
        "g[t] = (∂L/∂h_t + g[t+1] V) ⊙ φ'(h_t) for t = T-1..0, and modReLU's bias gradient");
  register_cell_loops(m);
}
