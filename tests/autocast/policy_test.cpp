// autocast/policy.hpp: the built-in tables carry PyTorch's categories, and a copy can be
// extended or changed without touching the shared ones.
#include <mixprec/autocast/policy.hpp>

#include <catch2/catch.hpp>

using namespace mixprec;

TEST_CASE("the PyTorch CPU table is the AutocastCPU registration", "[autocast][policy]") {
  const auto cpu = autocast_policy::pytorch_cpu();
  for (const char* op : {"mm", "bmm", "addmm", "linear", "matmul", "conv2d", "prelu", "scaled_dot_product_attention"})
    CHECK(cpu->category(op) == op_category::lower_precision);
  for (const char* op : {"mse_loss", "cross_entropy_loss", "nll_loss", "prod", "cdist", "kl_div"})
    CHECK(cpu->category(op) == op_category::fp32);
  for (const char* op : {"cat", "stack", "index_copy"}) CHECK(cpu->category(op) == op_category::promote);
  // Not registered for CPU: PyTorch runs them in the input's dtype there.
  for (const char* op : {"softmax", "layer_norm", "exp", "relu"}) CHECK(cpu->category(op) == op_category::fallthrough);
}

TEST_CASE("the PyTorch CUDA table is the AT_FORALL lists", "[autocast][policy]") {
  const auto cuda = autocast_policy::pytorch_cuda();
  for (const char* op : {"mm", "linear", "matmul", "baddbmm", "conv1d", "lstm_cell", "scaled_dot_product_attention"})
    CHECK(cuda->category(op) == op_category::lower_precision);
  for (const char* op : {"softmax", "log_softmax", "layer_norm", "group_norm", "exp", "log", "pow", "sum", "cumsum",
                         "prod", "norm", "mse_loss", "nll_loss", "logsumexp"})
    CHECK(cuda->category(op) == op_category::fp32);
  for (const char* op : {"addcmul", "dot", "index_put", "scatter_add"})
    CHECK(cuda->category(op) == op_category::promote);
  CHECK(cuda->category("cat") == op_category::fallthrough);
}

TEST_CASE("standard() has the categories DESIGN.md names on every device", "[autocast][policy]") {
  const auto standard = autocast_policy::standard();
  for (const char* op : {"matmul", "mm", "bmm", "addmm", "linear", "conv2d", "prelu", "scaled_dot_product_attention"})
    CHECK(standard->category(op) == op_category::lower_precision);
  for (const char* op : {"softmax", "log_softmax", "layer_norm", "group_norm", "batch_norm", "exp", "log", "pow", "sum",
                         "mean", "norm", "cumsum", "prod", "mse_loss", "cross_entropy_loss", "l1_loss"})
    CHECK(standard->category(op) == op_category::fp32);
  for (const char* op : {"add", "mul", "cat", "stack", "where", "index_put", "index_copy"})
    CHECK(standard->category(op) == op_category::promote);
  CHECK(standard->category("relu") == op_category::fallthrough);
  CHECK(standard->category("gelu") == op_category::fallthrough);
}

TEST_CASE("a copy of a table can be extended and changed; the shared one stays as it was", "[autocast][policy]") {
  autocast_policy mine = *autocast_policy::standard();
  mine.set("flash_attention", op_category::lower_precision).set("softmax", op_category::fallthrough);
  CHECK(mine.category("flash_attention") == op_category::lower_precision);
  CHECK(mine.category("softmax") == op_category::fallthrough);
  CHECK(autocast_policy::standard()->category("softmax") == op_category::fp32);
  CHECK(autocast_policy::standard()->category("flash_attention") == op_category::fallthrough);
  CHECK_THROWS_AS(mine.set("", op_category::fp32), invalid_argument);
  const auto promoted = mine.operations(op_category::promote);
  CHECK(std::is_sorted(promoted.begin(), promoted.end()));
}
