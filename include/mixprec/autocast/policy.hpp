// Which precision each operation runs in under autocast: a table from operation names to
// categories, anchored on PyTorch's autocast lists (aten/src/ATen/autocast_mode.cpp, the
// AutocastCPU registrations, and aten/src/ATen/autocast_mode.h, the AT_FORALL_* lists that
// AutocastCUDA registers).
//
//   lower_precision   inputs cast to the scope's dtype, result in that dtype
//                     (matrix products, convolutions, attention)
//   fp32              inputs cast to float32, result in float32 (softmax, norms, exp/log/pow,
//                     reductions, every loss)
//   promote           inputs cast to the widest input dtype, result in it (cat, stack, add ...)
//   fallthrough       not listed: the operation runs in its inputs' dtype, as without autocast
//
// Three tables come built in, each immutable and shared: pytorch_cpu() and pytorch_cuda() are
// transcriptions of PyTorch's lists (operation names as ATen spells them, overloads folded);
// standard(), mixprec's default, is their union plus what DESIGN.md asks for on both devices
// (softmax, log_softmax, layer/batch norm, exp/log/pow, the reductions and every loss in
// float32; add/mul/where promoted).  Users copy one and extend or replace entries:
//
//   auto mine = std::make_shared<mixprec::autocast_policy>(mixprec::autocast_policy::standard());
//   mine->set("my_attention", mixprec::op_category::lower_precision);
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../errors.hpp"

namespace mixprec {

enum class op_category { lower_precision, fp32, promote, fallthrough };

constexpr const char* to_string(op_category c) noexcept {
  switch (c) {
    case op_category::lower_precision:
      return "lower_precision";
    case op_category::fp32:
      return "fp32";
    case op_category::promote:
      return "promote";
    case op_category::fallthrough:
      return "fallthrough";
  }
  return "invalid op_category";
}

class autocast_policy {
 public:
  autocast_policy() = default;
  autocast_policy(std::initializer_list<const char*> lower_precision, std::initializer_list<const char*> fp32,
                  std::initializer_list<const char*> promote) {
    for (const char* op : lower_precision) set(op, op_category::lower_precision);
    for (const char* op : fp32) set(op, op_category::fp32);
    for (const char* op : promote) set(op, op_category::promote);
  }

  // The category of `op`; fallthrough for names the table does not list.
  op_category category(const std::string& op) const {
    const auto found = categories_.find(op);
    return found == categories_.end() ? op_category::fallthrough : found->second;
  }

  // Puts `op` in category c (fallthrough removes it).  Names must be non-empty.
  autocast_policy& set(const std::string& op, op_category c) {
    if (op.empty()) throw invalid_argument("autocast_policy::set: empty operation name");
    if (c == op_category::fallthrough) {
      categories_.erase(op);
    } else {
      categories_[op] = c;
    }
    return *this;
  }

  // The operations listed in category c, sorted.
  std::vector<std::string> operations(op_category c) const {
    std::vector<std::string> ops;
    for (const auto& entry : categories_) {
      if (entry.second == c) ops.push_back(entry.first);
    }
    std::sort(ops.begin(), ops.end());
    return ops;
  }

  static std::shared_ptr<const autocast_policy> pytorch_cpu();
  static std::shared_ptr<const autocast_policy> pytorch_cuda();
  static std::shared_ptr<const autocast_policy> standard();

 private:
  std::unordered_map<std::string, op_category> categories_;
};

// TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) in aten/src/ATen/autocast_mode.cpp: every operation
// registered there, overloads folded into one name.
inline std::shared_ptr<const autocast_policy> autocast_policy::pytorch_cpu() {
  static const auto policy =
      std::make_shared<const autocast_policy>(autocast_policy({"conv1d",
                                                               "conv2d",
                                                               "conv3d",
                                                               "bmm",
                                                               "mm",
                                                               "linalg_vecdot",
                                                               "baddbmm",
                                                               "addmm",
                                                               "_addmm_activation",
                                                               "addbmm",
                                                               "linear",
                                                               "_convolution",
                                                               "matmul",
                                                               "conv_tbc",
                                                               "mkldnn_rnn_layer",
                                                               "conv_transpose1d",
                                                               "conv_transpose2d",
                                                               "conv_transpose3d",
                                                               "prelu",
                                                               "scaled_dot_product_attention",
                                                               "_native_multi_head_attention"},
                                                              {"avg_pool3d",
                                                               "binary_cross_entropy",
                                                               "grid_sampler",
                                                               "polar",
                                                               "prod",
                                                               "quantile",
                                                               "nanquantile",
                                                               "stft",
                                                               "cdist",
                                                               "grid_sampler_2d",
                                                               "_grid_sampler_2d_cpu_fallback",
                                                               "grid_sampler_3d",
                                                               "trace",
                                                               "view_as_complex",
                                                               "cholesky",
                                                               "cholesky_inverse",
                                                               "cholesky_solve",
                                                               "inverse",
                                                               "lu_solve",
                                                               "orgqr",
                                                               "ormqr",
                                                               "pinverse",
                                                               "max_pool3d",
                                                               "max_unpool2d",
                                                               "max_unpool3d",
                                                               "adaptive_avg_pool3d",
                                                               "reflection_pad1d",
                                                               "reflection_pad2d",
                                                               "replication_pad1d",
                                                               "replication_pad2d",
                                                               "replication_pad3d",
                                                               "mse_loss",
                                                               "cosine_embedding_loss",
                                                               "nll_loss",
                                                               "nll_loss2d",
                                                               "hinge_embedding_loss",
                                                               "poisson_nll_loss",
                                                               "smooth_l1_loss",
                                                               "cross_entropy_loss",
                                                               "l1_loss",
                                                               "huber_loss",
                                                               "margin_ranking_loss",
                                                               "soft_margin_loss",
                                                               "triplet_margin_loss",
                                                               "multi_margin_loss",
                                                               "ctc_loss",
                                                               "kl_div",
                                                               "multilabel_margin_loss",
                                                               "binary_cross_entropy_with_logits",
                                                               "fft_fft",
                                                               "fft_ifft",
                                                               "fft_fft2",
                                                               "fft_ifft2",
                                                               "fft_fftn",
                                                               "fft_ifftn",
                                                               "fft_rfft",
                                                               "fft_irfft",
                                                               "fft_rfft2",
                                                               "fft_irfft2",
                                                               "fft_rfftn",
                                                               "fft_irfftn",
                                                               "fft_hfft",
                                                               "fft_ihfft",
                                                               "linalg_cond",
                                                               "linalg_matrix_rank",
                                                               "linalg_solve",
                                                               "linalg_cholesky",
                                                               "linalg_svdvals",
                                                               "linalg_eigvals",
                                                               "linalg_eigvalsh",
                                                               "linalg_inv",
                                                               "linalg_householder_product",
                                                               "linalg_tensorinv",
                                                               "linalg_tensorsolve",
                                                               "fake_quantize_per_tensor_affine",
                                                               "geqrf",
                                                               "_lu_with_info",
                                                               "qr",
                                                               "svd",
                                                               "triangular_solve",
                                                               "fractional_max_pool2d",
                                                               "fractional_max_pool3d",
                                                               "adaptive_max_pool3d",
                                                               "multilabel_margin_loss_forward",
                                                               "linalg_qr",
                                                               "linalg_cholesky_ex",
                                                               "linalg_svd",
                                                               "linalg_eig",
                                                               "linalg_eigh",
                                                               "linalg_lstsq",
                                                               "linalg_inv_ex"},
                                                              {"stack", "cat", "index_copy"}));
  return policy;
}

// AutocastCUDA: AT_FORALL_LOWER_PRECISION_FP (plus cudnn_convolution and
// cudnn_convolution_transpose), AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE and norm
// (fp32_append_dtype) as fp32, AT_FORALL_PROMOTE.
inline std::shared_ptr<const autocast_policy> autocast_policy::pytorch_cuda() {
  static const auto policy = std::make_shared<const autocast_policy>(
      autocast_policy({"_convolution",
                       "conv1d",
                       "conv2d",
                       "conv3d",
                       "conv_tbc",
                       "conv_transpose1d",
                       "conv_transpose2d",
                       "conv_transpose3d",
                       "convolution",
                       "prelu",
                       "addmm",
                       "addmv",
                       "addr",
                       "matmul",
                       "einsum",
                       "mm",
                       "mv",
                       "linalg_vecdot",
                       "linear",
                       "addbmm",
                       "baddbmm",
                       "bmm",
                       "chain_matmul",
                       "linalg_multi_dot",
                       "_thnn_fused_lstm_cell",
                       "_thnn_fused_gru_cell",
                       "lstm_cell",
                       "gru_cell",
                       "rnn_tanh_cell",
                       "rnn_relu_cell",
                       "_scaled_dot_product_flash_attention",
                       "scaled_dot_product_attention",
                       "cudnn_convolution",
                       "cudnn_convolution_transpose"},
                      {"acos",
                       "asin",
                       "cosh",
                       "erfinv",
                       "exp",
                       "expm1",
                       "log",
                       "log10",
                       "log2",
                       "log1p",
                       "reciprocal",
                       "rsqrt",
                       "sinh",
                       "tan",
                       "pow",
                       "softplus",
                       "layer_norm",
                       "native_layer_norm",
                       "group_norm",
                       "frobenius_norm",
                       "nuclear_norm",
                       "cosine_similarity",
                       "poisson_nll_loss",
                       "cosine_embedding_loss",
                       "nll_loss",
                       "nll_loss2d",
                       "hinge_embedding_loss",
                       "kl_div",
                       "l1_loss",
                       "smooth_l1_loss",
                       "huber_loss",
                       "mse_loss",
                       "margin_ranking_loss",
                       "multilabel_margin_loss",
                       "soft_margin_loss",
                       "triplet_margin_loss",
                       "multi_margin_loss",
                       "binary_cross_entropy_with_logits",
                       "dist",
                       "pdist",
                       "cdist",
                       "renorm",
                       "logsumexp",
                       "upsample_nearest1d",
                       "_upsample_nearest_exact1d",
                       "upsample_nearest2d",
                       "_upsample_nearest_exact2d",
                       "upsample_nearest3d",
                       "_upsample_nearest_exact3d",
                       "upsample_linear1d",
                       "upsample_bilinear2d",
                       "_upsample_bilinear2d_aa",
                       "upsample_trilinear3d",
                       "upsample_bicubic2d",
                       "_upsample_bicubic2d_aa",
                       "prod",
                       "softmax",
                       "log_softmax",
                       "cumprod",
                       "cumsum",
                       "linalg_vector_norm",
                       "linalg_matrix_norm",
                       "sum",
                       "norm"},
                      {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
                       "tensordot", "scatter_add"}));
  return policy;
}

// mixprec's default, the same on every device: the union of both PyTorch tables, plus the
// categories DESIGN.md ("Autocast") names for every device: batch_norm, mean and
// cross_entropy_loss in float32 (PyTorch's CUDA table reaches cross entropy through
// log_softmax and nll_loss), and the elementwise arithmetic and selection of mixed inputs
// promoted to the widest.
inline std::shared_ptr<const autocast_policy> autocast_policy::standard() {
  static const auto policy = [] {
    auto merged = std::make_shared<autocast_policy>();
    for (const auto& table : {pytorch_cpu(), pytorch_cuda()}) {
      for (op_category c : {op_category::lower_precision, op_category::fp32, op_category::promote}) {
        for (const std::string& op : table->operations(c)) merged->set(op, c);
      }
    }
    for (const char* op : {"batch_norm", "mean", "cross_entropy_loss", "softmax", "log_softmax", "layer_norm",
                           "group_norm", "exp", "log", "pow", "sum", "prod", "cumsum", "norm"}) {
      merged->set(op, op_category::fp32);
    }
    for (const char* op : {"add", "sub", "mul", "div", "where", "cat", "stack", "index_copy", "index_put"}) {
      merged->set(op, op_category::promote);
    }
    return std::shared_ptr<const autocast_policy>(std::move(merged));
  }();
  return policy;
}

}  // namespace mixprec
