// Compile-time probe: Eigen's dense module and a tiny product (the yardstick of issue 14).
#include <Eigen/Dense>

int main() {
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(4, 4);
  const Eigen::MatrixXf b = a * a;
  return b(0, 0) > 0 ? 0 : 1;
}
