// Defines io::detail::op_work: the FLOPs and bytes of a GEMM, convolution or attention operator from the shapes a profiler recorded.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_OP_FLOPS_HPP
#define DAYDREAM_IO_DETAIL_OP_FLOPS_HPP

#include <daydream/io/detail/tensor_bytes.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace daydream::io::detail {

/// What an operator computes and moves, from its recorded shapes.
struct op_work {
  std::uint64_t flops = 0; ///< floating-point operations (a multiply-add counts 2)
  std::uint64_t bytes = 0; ///< its tensor inputs plus the outputs it writes
  bool estimated = false;  ///< a convolution without recorded strides: output spatial = input spatial
};

//! @cond DAYDREAM_INTERNAL
/// The dims of each entry of `Input Dims` (`[[64, 3], [], [[2], [3]]]`): a tensor list or
/// anything else that is not a flat list of integers comes back empty. Empty on
/// malformed text.
inline std::vector<std::vector<std::int64_t>> parse_dims(std::string_view text) {
  std::vector<std::vector<std::int64_t>> out;
  json_cursor c{text};
  if (!c.eat('[')) return {};
  if (c.eat(']')) return out;
  do {
    std::vector<std::int64_t> dims;
    c.ws();
    if (c.i < c.s.size() && c.s[c.i] == '[') {
      auto start = c.i;
      ++c.i;
      c.ws();
      bool flat = c.i < c.s.size() && c.s[c.i] != '[';
      c.i = start;
      if (!flat) {
        if (!c.skip()) return {};
      } else {
        c.eat('[');
        if (!c.eat(']')) {
          do {
            c.ws();
            std::int64_t v = 0;
            bool digit = false, neg = false;
            if (c.i < c.s.size() && c.s[c.i] == '-') { neg = true; ++c.i; }
            while (c.i < c.s.size() && c.s[c.i] >= '0' && c.s[c.i] <= '9') {
              digit = true;
              v = v > (std::int64_t(1) << 50) ? v : v * 10 + (c.s[c.i] - '0');
              ++c.i;
            }
            if (!digit) return {};
            dims.push_back(neg ? 0 : v);
          } while (c.eat(','));
          if (!c.eat(']')) return {};
        }
      }
    } else if (!c.skip()) {
      return {};
    }
    out.push_back(std::move(dims));
  } while (c.eat(','));
  return c.eat(']') ? out : std::vector<std::vector<std::int64_t>>{};
}

/// The string entries of a JSON array of strings (`Input type`, `Concrete Inputs`),
/// escapes kept; a non-string entry comes back empty. Empty on malformed text.
inline std::vector<std::string_view> parse_strings(std::string_view text) {
  std::vector<std::string_view> out;
  json_cursor c{text};
  if (!c.eat('[')) return {};
  if (c.eat(']')) return out;
  do {
    c.ws();
    std::string_view v;
    if (c.i < c.s.size() && c.s[c.i] == '"') {
      auto start = c.i + 1;
      if (!c.skip()) return {};
      v = c.s.substr(start, c.i - 1 - start);
    } else if (!c.skip()) {
      return {};
    }
    out.push_back(v);
  } while (c.eat(','));
  return c.eat(']') ? out : std::vector<std::string_view>{};
}

/// The integers of a concrete argument, `[2, 2]` or `1`; empty when it is none.
inline std::vector<std::int64_t> concrete_ints(std::string_view s) {
  std::vector<std::int64_t> out;
  std::size_t i = 0;
  auto ws = [&] { while (i < s.size() && (s[i] == ' ' || s[i] == '[' || s[i] == ']' || s[i] == ',')) ++i; };
  ws();
  while (i < s.size()) {
    std::int64_t v = 0;
    bool digit = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < (std::int64_t(1) << 40)) v = v * 10 + (s[i++] - '0'), digit = true;
    if (!digit) return {};
    out.push_back(v);
    ws();
  }
  return out;
}

/// Saturating arithmetic on FLOP and byte counts.
inline std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) noexcept {
  if (a == 0 || b == 0) return 0;
  return a > std::numeric_limits<std::uint64_t>::max() / b ? std::numeric_limits<std::uint64_t>::max() : a * b;
}
inline std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}
inline std::uint64_t elements(const std::vector<std::int64_t>& d, std::size_t from = 0) noexcept {
  std::uint64_t n = 1;
  for (std::size_t k = from; k < d.size(); ++k) n = sat_mul(n, std::uint64_t(d[k] > 0 ? d[k] : 0));
  return n;
}

/// The FLOPs of a convolution of input `x` [N, C, *spatial] with weight `w` [Cout,
/// C/groups, *kernel]: 2 x N x Cout x output elements per channel x C/groups x kernel
/// elements. `stride`, `padding`, `dilation` as recorded (empty: output spatial = input).
inline std::uint64_t conv_flops(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& w,
                                const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding,
                                const std::vector<std::int64_t>& dilation, std::vector<std::int64_t>* out = nullptr) {
  if (x.size() < 3 || w.size() != x.size()) return 0;
  const std::size_t sp = x.size() - 2;
  auto at = [&](const std::vector<std::int64_t>& v, std::size_t k, std::int64_t dflt) {
    return v.empty() ? dflt : v.size() == 1 ? v[0] : k < v.size() ? v[k] : dflt;
  };
  std::uint64_t per = 1;
  if (out) *out = {x[0], w[0]};
  for (std::size_t k = 0; k < sp; ++k) {
    std::int64_t o = x[2 + k];
    if (!stride.empty()) {
      const std::int64_t s = std::max<std::int64_t>(at(stride, k, 1), 1);
      o = (x[2 + k] + 2 * at(padding, k, 0) - at(dilation, k, 1) * (w[2 + k] - 1) - 1) / s + 1;
    }
    if (o <= 0) return 0;
    per = sat_mul(per, std::uint64_t(o));
    if (out) out->push_back(o);
  }
  return sat_mul(sat_mul(sat_mul(2, std::uint64_t(x[0])), sat_mul(std::uint64_t(w[0]), per)), elements(w, 1));
}
//! @endcond

/// The FLOPs and bytes of operator `name` from its recorded `Input Dims`, `Input type`
/// and `Concrete Inputs` (raw JSON text), for the operators whose work follows from
/// their shapes:
///
/// - GEMMs: `aten::mm`, `addmm`, `bmm`, `baddbmm`, `matmul`, `linear`, `mv`, `addmv`:
///   2 x M x N x K (x batch); the bias of `addmm` and its kin is not counted.
/// - Convolutions: `aten::convolution`, `_convolution`, `cudnn_convolution`,
///   `conv1d/2d/3d`: 2 x N x Cout x output pixels x Cin/groups x kernel elements, the
///   output from the recorded stride, padding and dilation (`Concrete Inputs`); without
///   them the output is taken as the input's size (`estimated`). `convolution_backward`:
///   the forward's FLOPs (its output from the recorded gradient) once per gradient its
///   output mask asks for (input, weight; both when unrecorded). Transposed ones: none.
/// - Attention: `scaled_dot_product_attention` and the fused kernels' operators (flash,
///   memory-efficient, cuDNN; [B, H, L, D] or, for `_flash_attention_*` and
///   `_efficient_attention_*`, [B, L, H, D]): 2 x 2 x B x H x Lq x Lk x D; their
///   backward operators 2.5 times that (five matrix products against two). A causal
///   mask's skipped half is not subtracted.
///
/// Bytes are the inputs' (input_bytes) plus the outputs': the product, the convolution's
/// output (the gradients asked for, backward), the attention's output (dQ, dK, dV,
/// backward), in the first input's element type. Empty for any other operator; a
/// known operator with shapes it cannot use gives 0 FLOPs.
///
///     op_flops("aten::mm", "[[64, 32], [32, 16]]", "[\"float\", \"float\"]", "")->flops == 65536;
inline std::optional<op_work> op_flops(std::string_view name, std::string_view dims, std::string_view types,
                                       std::string_view concrete) {
  if (name.substr(0, 6) != "aten::") return std::nullopt;
  name.remove_prefix(6);
  enum class kind { gemm, conv, conv_bwd, attn, attn_bwd } k;
  bool blhd = false; // attention inputs laid out [B, L, H, D]
  if (name == "mm" || name == "addmm" || name == "bmm" || name == "baddbmm" || name == "matmul" ||
      name == "linear" || name == "mv" || name == "addmv")
    k = kind::gemm;
  else if (name == "convolution" || name == "_convolution" || name == "cudnn_convolution" || name == "conv1d" ||
           name == "conv2d" || name == "conv3d")
    k = kind::conv;
  else if (name == "convolution_backward")
    k = kind::conv_bwd;
  else if (name == "scaled_dot_product_attention" || name == "_scaled_dot_product_flash_attention" ||
           name == "_scaled_dot_product_efficient_attention" || name == "_scaled_dot_product_cudnn_attention" ||
           name == "_cudnn_attention_forward" || name == "_flash_attention_forward" ||
           name == "_efficient_attention_forward")
    k = kind::attn, blhd = name == "_flash_attention_forward" || name == "_efficient_attention_forward";
  else if (name == "_scaled_dot_product_flash_attention_backward" ||
           name == "_scaled_dot_product_efficient_attention_backward" ||
           name == "_scaled_dot_product_cudnn_attention_backward" || name == "_cudnn_attention_backward" ||
           name == "_flash_attention_backward" || name == "_efficient_attention_backward")
    k = kind::attn_bwd, blhd = name == "_flash_attention_backward" || name == "_efficient_attention_backward";
  else
    return std::nullopt;
  op_work w;
  const auto d = parse_dims(dims);
  const auto t = parse_strings(types);
  const auto c = parse_strings(concrete);
  auto arg = [&](std::size_t i) { return i < c.size() ? concrete_ints(c[i]) : std::vector<std::int64_t>{}; };
  auto dim = [&](std::size_t i) -> const std::vector<std::int64_t>& {
    static const std::vector<std::int64_t> none;
    return i < d.size() ? d[i] : none;
  };
  std::uint32_t esize = 0; // the first tensor input's element size
  for (std::size_t i = 0; i < t.size() && !esize; ++i) esize = dtype_size(t[i]);
  std::uint64_t out = 0; // output elements
  switch (k) {
  case kind::gemm: {
    const bool bias = name == "addmm" || name == "baddbmm" || name == "addmv";
    const auto& a = dim(bias ? 1 : 0);
    const auto& b = dim(bias ? 2 : 1);
    if (a.empty() || b.empty()) return w;
    std::uint64_t batch = 1, m = 1, n = 1, kk = 0;
    if (name == "linear") { // x [..., K], W [N, K]
      if (b.size() != 2) return w;
      kk = std::uint64_t(b[1]), n = std::uint64_t(b[0]);
      m = elements(a) / std::max<std::uint64_t>(kk, 1);
    } else {
      // matmul's rules: a 1-D operand is a vector; batch dims broadcast.
      kk = std::uint64_t(a.back());
      m = a.size() >= 2 ? std::uint64_t(a[a.size() - 2]) : 1;
      n = b.size() >= 2 ? std::uint64_t(b.back()) : 1;
      const std::size_t ba = a.size() > 2 ? a.size() - 2 : 0, bb = b.size() > 2 ? b.size() - 2 : 0;
      for (std::size_t i = 0; i < std::max(ba, bb); ++i) {
        const std::int64_t x = i < ba ? a[ba - 1 - i] : 1, y = i < bb ? b[bb - 1 - i] : 1;
        batch = sat_mul(batch, std::uint64_t(std::max<std::int64_t>({x, y, 0})));
      }
    }
    w.flops = sat_mul(sat_mul(2, batch), sat_mul(sat_mul(m, n), kk));
    out = sat_mul(batch, sat_mul(m, n));
    break;
  }
  case kind::conv: {
    const bool cudnn = name == "cudnn_convolution";
    const bool plain = name.substr(0, 4) == "conv" && name != "convolution"; // conv1d/2d/3d
    if (!cudnn && !plain && c.size() > 6 && c[6] == "True") return w;      // transposed
    const std::size_t pi = cudnn ? 2 : 4;
    const auto stride = arg(3), padding = arg(pi), dilation = arg(cudnn ? 4 : 5);
    // No stride recorded, or a padding that is no list of numbers ("same"): the estimate.
    w.estimated = stride.empty() || (padding.empty() && pi < c.size() && !c[pi].empty());
    std::vector<std::int64_t> o;
    w.flops = conv_flops(dim(0), dim(1), w.estimated ? std::vector<std::int64_t>{} : stride, padding, dilation, &o);
    out = w.flops ? elements(o) : 0;
    break;
  }
  case kind::conv_bwd: { // grad_output [N, Cout, *out], input, weight [Cout, Cin/g, *k]
    if (c.size() > 7 && c[7] == "True") return w; // transposed
    const auto& go = dim(0);
    const auto& x = dim(1);
    const auto& wt = dim(2);
    if (go.size() < 3 || wt.size() != go.size() || x.size() != go.size()) return w;
    const std::uint64_t one = sat_mul(sat_mul(sat_mul(2, std::uint64_t(go[0])), elements(go, 1)), elements(wt, 1));
    std::uint64_t grads = 2;
    bool in = true, weight = true;
    if (c.size() > 10 && !c[10].empty()) {
      auto mask = c[10];
      in = mask.find("True") != std::string_view::npos && mask.find("True") < mask.find(',');
      auto rest = mask.substr(std::min(mask.find(',') + 1, mask.size()));
      weight = rest.find("True") != std::string_view::npos && rest.find("True") < rest.find(',');
      grads = std::uint64_t(in) + std::uint64_t(weight);
    }
    w.flops = sat_mul(one, grads);
    out = sat_add(in ? elements(x) : 0, weight ? elements(wt) : 0);
    break;
  }
  case kind::attn:
  case kind::attn_bwd: {
    const std::size_t q = k == kind::attn ? 0 : 1;
    const auto& qd = dim(q);
    const auto& kd = dim(q + 1);
    const auto& vd = dim(q + 2);
    if (qd.size() != 4 || kd.size() != 4) return w;
    const std::int64_t lk = blhd ? kd[1] : kd[2];
    const std::uint64_t dv = vd.size() == 4 ? std::uint64_t(vd[3]) : std::uint64_t(qd[3]);
    // QK^T: 2 B H Lq Lk D; PV: 2 B H Lq Lk Dv. numel(q) = B H Lq D.
    const std::uint64_t bhl = elements(qd) / std::max<std::uint64_t>(std::uint64_t(qd[3]), 1);
    const std::uint64_t fwd =
        sat_mul(sat_mul(2, bhl), sat_mul(std::uint64_t(std::max<std::int64_t>(lk, 0)), std::uint64_t(qd[3]) + dv));
    w.flops = k == kind::attn ? fwd : sat_add(sat_mul(fwd, 2), fwd / 2);
    out = k == kind::attn ? sat_mul(bhl, dv) : sat_add(elements(qd), sat_add(elements(kd), elements(vd)));
    break;
  }
  }
  if (w.flops == 0) return w;
  w.bytes = sat_add(input_bytes(dims, types), sat_mul(out, esize));
  return w;
}

} // namespace daydream::io::detail

#endif
