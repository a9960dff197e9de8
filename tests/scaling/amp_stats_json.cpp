// Prints, one per line, the statistics JSON (to_json(scaler_statistics)) of scalers that have
// seen everything the schema describes: scale changes of every common reason, skipped steps with
// culprits in two optimizers, a floor, and a scaler that has seen nothing.  tests/docs/
// amp_stats_schema_check.py validates every line against docs/schemas/amp_stats.schema.json.
#include <mixprec/scaling/scaling.hpp>

#include <cstdio>
#include <limits>
#include <vector>

using namespace mixprec;

namespace {

template <class Policy>
void run(loss_scaler<Policy>& scaler, int iterations) {
  for (int it = 0; it < iterations; ++it) {
    std::vector<float> a(40, 1.0f), b(9, 1.0f);
    if (it % 3 == 1) a[static_cast<std::size_t>(it)] = std::numeric_limits<float>::infinity();
    if (it % 5 == 4) b[2] = -std::numeric_limits<float>::quiet_NaN();
    scaler.unscale({gradient_view(a.data(), a.size()), gradient_view(b.data(), b.size())});
    std::vector<float> c(3, it == 7 ? std::numeric_limits<float>::infinity() : 1.0f);
    scaler.unscale(c.data(), c.size(), 1);
    scaler.step([] {}, 0);
    scaler.step([] {}, 1);
    scaler.update();
  }
}

}  // namespace

int main() {
  dynamic_scaling d;
  d.growth_interval = 2;
  loss_scaler<dynamic_scaling> dynamic{d};
  run(dynamic, 20);
  std::puts(to_json(dynamic.get_amp_stats()).c_str());

  hysteresis_scaling h;
  h.rules = hysteresis_scaling::rule_set::deepspeed;
  h.init_scale = 4.0f;
  scaler_options floor;
  floor.min_scale = 1.0f;
  loss_scaler<hysteresis_scaling> hysteresis{h, floor};
  run(hysteresis, 30);  // reaches the floor
  std::puts(to_json(hysteresis.get_amp_stats()).c_str());

  loss_scaler<no_scaling> fresh;  // nothing seen: empty lists
  std::puts(to_json(fresh.get_amp_stats()).c_str());
  return 0;
}
