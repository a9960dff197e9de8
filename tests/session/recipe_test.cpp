// session/recipe.hpp, recipe_fields.hpp, parse_recipe.hpp, detail/json.hpp: the named recipes
// and Apex's opt levels hold their documented settings; every text form gives the same recipe;
// every key overrides its policy option; and every malformed, hostile or contradictory input is a
// recipe_error whose message names the problem and what is allowed.
#include <mixprec/session/parse_recipe.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

struct expected_recipe {
  const char* name;
  precision_mode precision;
  loss_scaling_mode scaling;
  bool autocast, master_weights, cast_model, keep_batchnorm_fp32;
};

std::string error_of(const std::string& text) {
  try {
    parse_recipe(text);
  } catch (const recipe_error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("named recipes and Apex opt levels resolve to their documented settings", "[recipe]") {
  using p = precision_mode;
  using s = loss_scaling_mode;
  const expected_recipe table[] = {
      {"fp32", p::float32, s::none, false, false, false, false},
      {"fp16", p::float16, s::dynamic, true, false, false, false},
      {"bf16", p::bfloat16, s::none, true, false, false, false},
      {"fp8", p::float8, s::none, true, true, false, false},
      {"O0", p::float32, s::fixed, false, false, false, false},   // pure fp32, loss_scale 1.0
      {"O1", p::float16, s::dynamic, true, false, false, false},  // patched functions, fp32 model
      {"O2", p::float16, s::dynamic, false, true, true, true},    // fp16 model, fp32 masters and batchnorm
      {"O3", p::float16, s::fixed, false, false, true, false},    // pure fp16, loss_scale 1.0
  };
  for (const expected_recipe& e : table) {
    INFO(e.name);
    const recipe r = parse_recipe(e.name);
    CHECK(r.name == e.name);
    CHECK(r.precision == e.precision);
    CHECK(r.scaling == e.scaling);
    CHECK(r.autocast == e.autocast);
    CHECK(r.master_weights == e.master_weights);
    CHECK(r.cast_model == e.cast_model);
    CHECK(r.keep_batchnorm_fp32 == e.keep_batchnorm_fp32);
    CHECK(r.static_scale == 1.0f);
    CHECK(r.init_scale == 65536.0f);  // PyTorch GradScaler's and Apex's dynamic start
    CHECK(r.accumulation_steps == 1);
    CHECK(r.max_grad_norm == 0);
  }
  CHECK(parse_recipe("o2").name == "O2");  // names are case-insensitive
  CHECK(recipes::O1().working_dtype() == dtype::float16);
  CHECK(recipes::bf16().working_dtype() == dtype::bfloat16);
  CHECK(recipes::fp8().working_dtype() == dtype::bfloat16);
  CHECK(recipes::fp32().working_dtype() == dtype::float32);
  const delayed_scaling fp8 = recipes::fp8().fp8_policy();  // Transformer Engine's DelayedScaling defaults
  CHECK(fp8.format == fp8_format::hybrid);
  CHECK(fp8.margin == 0);
  CHECK(fp8.amax_history_len == 1024);
  CHECK(fp8.amax_compute_algo == amax_algorithm::max);
}

TEST_CASE("key=value text, flags, argv and JSON give the same recipe, and to_string reads back", "[recipe]") {
  const recipe from_pairs = parse_recipe("recipe=O2, init_scale=1024 growth_interval = 100,max_grad_norm=1.5");
  const recipe from_flags = parse_recipe("--recipe O2 --init-scale 1024 --growth_interval=100 --max-grad-norm 1.5");
  const recipe from_json =
      parse_recipe("{\"recipe\": \"O2\", \"init_scale\": 1024, \"growth_interval\": 100, \"max_grad_norm\": 1.5}");
  const char* argv[] = {"train", "--recipe",        "O2", "--init-scale", "1024", "--growth-interval",
                        "100",   "--max-grad-norm", "1.5"};
  const recipe from_argv = parse_recipe_args(9, argv);
  CHECK(from_pairs.init_scale == 1024.0f);
  CHECK(from_pairs.growth_interval == 100);
  CHECK(from_pairs.max_grad_norm == 1.5);
  CHECK(from_pairs.master_weights);
  for (const recipe& r : {from_flags, from_json, from_argv}) {
    CHECK(to_string(r) == to_string(from_pairs));
  }
  for (const recipe& r : {recipes::fp32(), recipes::fp16(), recipes::bf16(), recipes::fp8(), recipes::O0(),
                          recipes::O1(), recipes::O2(), recipes::O3(), from_pairs}) {
    CHECK(to_string(parse_recipe(to_string(r))) == to_string(r));
  }
  CHECK(parse_recipe("--recipe fp16 --autocast").autocast);  // a bare boolean flag means true
  CHECK(parse_recipe("recipe=bf16, max_scale=inf").max_scale == INFINITY);
  CHECK(parse_recipe("{\"recipe\": \"bf16\", \"max_scale\": \"inf\"}").max_scale == INFINITY);
}

TEST_CASE("override rules read the same from text, flags, argv and JSON, and write back", "[recipe][overrides]") {
  const recipe from_pairs = parse_recipe("recipe=fp8, override=first:bf16, last:bf16,fc*.weight:fp8, seed=3");
  REQUIRE(from_pairs.overrides.rules.size() == 3);
  CHECK(from_pairs.overrides.rules[0].selector == "first");
  CHECK(from_pairs.overrides.rules[0].precision == precision_mode::bfloat16);
  CHECK(from_pairs.overrides.rules[2].selector == "fc*.weight");
  CHECK(from_pairs.overrides.rules[2].precision == precision_mode::float8);
  CHECK(from_pairs.seed == 3);  // the next key after the rules
  const char* argv[] = {"train", "--recipe", "fp8", "--override", "first:bf16,last:bf16,fc*.weight:fp8", "--seed", "3"};
  for (const recipe& r :
       {parse_recipe("--recipe fp8 --override=first:bf16,last:bf16,fc*.weight:fp8 --seed 3"),
        parse_recipe("{\"recipe\": \"fp8\", \"override\": \"first:bf16,last:bf16,fc*.weight:fp8\", \"seed\": 3}"),
        parse_recipe(
            "{\"recipe\": \"fp8\", \"override\": [\"first:bf16\", \"last:bf16\", \"fc*.weight:fp8\"], \"seed\": 3}"),
        parse_recipe_args(7, argv)}) {
    CHECK(to_string(r) == to_string(from_pairs));
  }
  CHECK(settings_text(from_pairs).find("override=first:bf16,last:bf16,fc*.weight:fp8") != std::string::npos);
  CHECK(to_string(parse_recipe(to_string(from_pairs))) == to_string(from_pairs));
  CHECK(settings_text(recipes::bf16()).find("override=none") != std::string::npos);
  CHECK(parse_recipe("recipe=bf16, override=none").overrides.empty());
  CHECK(parse_recipe("{\"recipe\": \"bf16\", \"override\": []}").overrides.empty());
  CHECK(parse_recipe("recipe=bf16, override=0-3:fp32").overrides.rules[0].selector == "0-3");
  const recipe pinned = parse_recipe("recipe=bf16, override=@softmax:fp32,first:fp32");
  CHECK(pinned.overrides.rules[0].selector == "@softmax");
  CHECK(to_string(parse_recipe(to_string(pinned))) == to_string(pinned));
  CHECK_FALSE(same_settings(parse_recipe("recipe=bf16, override=fc1:fp32"), recipes::bf16()));
}

TEST_CASE("bad override rules are recipe_errors that name the rule", "[recipe][overrides]") {
  const std::pair<std::string, std::string> cases[] = {
      {"recipe=bf16, override=fc1", "override rule 1 is 'fc1'; allowed: SELECTOR:PRECISION"},
      {"recipe=bf16, override=fc1:fp32,:bf16", "override rule 2 is ':bf16'"},
      {"recipe=bf16, override=fc1:fp64", "override rule 1 precision is 'fp64'; allowed: fp32, fp16, bf16, fp8"},
      {"recipe=bf16, override=3-1:fp32", "override range '3-1' runs backwards; allowed: N-M with N <= M"},
      {"recipe=bf16, override=1234567890:fp32", "override layer index '1234567890' is above 999999999"},
      {"recipe=bf16, override=f=c:fp32", "override rule 1 selector 'f=c' holds '='"},
      {"--recipe bf16 --override fc(1):fp32", "override rule 1 selector 'fc(1)' holds '('"},
      {"recipe=bf16, override=fc1:fp8",
       "override rule 1 'fc1:fp8' in a precision=bf16 recipe: fp8 layers need the fp8 recipe's delayed scaling"},
      {"recipe=bf16, override=fc1:fp16", "override rule 1 'fc1:fp16' with scaling=none while safe=true"},
      {"{\"recipe\": \"bf16\", \"override\": 3}",
       "override (line 1, column 32) is a number; allowed: a string or an array"},
      {"recipe=fp8, override=@linear:fp8", "override rule 1 '@linear:fp8': an operation rule pins fp32, fp16 or bf16"},
      {"recipe=bf16, override=@:fp32", "override rule 1 operation '@' names nothing"},
      {"recipe=bf16, override=@soft.max:fp32", "override rule 1 operation '@soft.max' is not @NAME"},
      {"{\"recipe\": \"bf16\", \"override\": [\"a:fp32,b:fp32\"]}",
       "holds a string with a comma; allowed: one \"SELECTOR:PRECISION\" string per item"},
  };
  for (const auto& c : cases) {
    INFO(c.first);
    std::string message;
    try {
      parse_recipe(c.first);
    } catch (const recipe_error& e) {
      message = e.what();
    }
    INFO(message);
    CHECK(message.find(c.second) != std::string::npos);
  }
  CHECK_NOTHROW(parse_recipe("recipe=bf16, scaling=dynamic, override=fc1:fp16"));
  recipe r = recipes::bf16();
  r.overrides.rules.push_back({"", precision_mode::float32});
  CHECK_THROWS_WITH(validate(r), Catch::Contains("override rule 1 has an empty selector"));
}

TEST_CASE("the data-parallel keys read from every form, default to float32 and 25 MiB, and write back",
          "[recipe][data_parallel]") {
  const recipe plain = parse_recipe("recipe=bf16");
  CHECK(plain.reduce_dtype == dtype::float32);
  CHECK(plain.bucket_bytes == std::int64_t{25} << 20);
  CHECK(plain.weight_check_interval == 0);
  const recipe text = parse_recipe("recipe=bf16, reduce_dtype=e5m2, bucket_bytes=4096, weight_check_interval=50");
  const recipe flags = parse_recipe("--recipe bf16 --reduce-dtype e5m2 --bucket-bytes 4096 --weight-check-interval 50");
  const recipe json =
      parse_recipe(R"({"recipe": "bf16", "reduce_dtype": "e5m2", "bucket_bytes": 4096, "weight_check_interval": 50})");
  for (const recipe* r : {&text, &flags, &json}) {
    CHECK(r->reduce_dtype == dtype::float8_e5m2);
    CHECK(r->bucket_bytes == 4096);
    CHECK(r->weight_check_interval == 50);
    const all_reduce_options o = r->reduce_options();
    CHECK(o.communication == dtype::float8_e5m2);
    CHECK(o.bucket_bytes == 4096u);
    CHECK(o.average);
  }
  CHECK(same_settings(parse_recipe(to_string(text)), text));
  CHECK(settings_text(text).find("reduce_dtype=e5m2, bucket_bytes=4096, weight_check_interval=50") !=
        std::string::npos);
  for (const char* name : {"fp32", "bf16", "fp16", "e4m3", "e5m2"}) {
    CHECK(to_string(parse_recipe(std::string("reduce_dtype=") + name)).find(std::string("reduce_dtype=") + name) !=
          std::string::npos);
  }
}

TEST_CASE("every option of the underlying policies is a key", "[recipe]") {
  const recipe h = parse_recipe(
      "recipe=fp16, scaling=hysteresis, init_scale=1024, growth_factor=4, backoff_factor=0.25, growth_interval=10, "
      "hysteresis_rules=deepspeed, hysteresis=3, hysteresis_min_scale=2, consecutive_hysteresis=true, "
      "raise_at_min_scale=true, min_scale=2, max_scale=1e6, at_floor=throw_error, max_consecutive_skips=5, "
      "history_capacity=8, accumulation_steps=4, seed=7, gradient_rounding=to_odd");
  const hysteresis_scaling p = h.hysteresis_policy();
  CHECK(p.rules == hysteresis_scaling::rule_set::deepspeed);
  CHECK(p.init_scale == 1024.0f);
  CHECK(p.growth_factor == 4.0f);
  CHECK(p.backoff_factor == 0.25f);
  CHECK(p.growth_interval == 10);
  CHECK(p.hysteresis == 3);
  CHECK(p.min_scale == 2.0f);
  CHECK(p.consecutive_hysteresis);
  CHECK(p.raise_at_min_scale);
  const scaler_options o = h.options();
  CHECK(o.min_scale == 2.0f);
  CHECK(o.max_scale == 1e6f);
  CHECK(o.at_floor == floor_action::throw_error);
  CHECK(o.max_consecutive_skips == 5);
  CHECK(o.history_capacity == 8);
  CHECK(o.unscale.gradient_rounding == rounding::to_odd);
  CHECK(h.accumulation_steps == 4);
  CHECK(h.seed == 7);
  const dynamic_scaling d = parse_recipe("recipe=fp16, backoff_factor=0.125, growth_factor=3").dynamic_policy();
  CHECK(d.backoff_factor == 0.125);
  CHECK(d.growth_factor == 3.0);
  CHECK(parse_recipe("recipe=O3, static_scale=128").static_policy().scale == 128.0f);
  const delayed_scaling f =
      parse_recipe("recipe=fp8, fp8_format=e4m3, margin=2, amax_history_len=16, amax_compute_algo=most_recent")
          .fp8_policy();
  CHECK(f.format == fp8_format::e4m3);
  CHECK(f.margin == 2);
  CHECK(f.amax_history_len == 16);
  CHECK(f.amax_compute_algo == amax_algorithm::most_recent);
}

TEST_CASE("bad keys, types and values are recipe_errors that say what is allowed", "[recipe]") {
  const std::pair<std::string, std::string> cases[] = {
      {"init_scal=3", "unknown key 'init_scal'; allowed keys: recipe, precision, scaling,"},
      {"{\"init_scale\": \"big\"}", "init_scale (line 1, column 16) is a string; allowed: a finite number > 0"},
      {"{\"autocast\": 1}", "autocast (line 1, column 14) is a number; allowed: true or false"},
      {"{\"precision\": true}", "is a boolean; allowed: a string, one of fp32, fp16, bf16, fp8"},
      {"precision=fp12",
       "precision is 'fp12'; allowed: fp32, fp16, bf16, fp8, mxfp8, fp8_block, nvfp4, fp8_rowwise, mxfp4"},
      {"scaling=adaptive", "allowed: none, static, dynamic, hysteresis"},
      {"recipe=O4",
       "unknown recipe name 'O4'; allowed: fp32, fp16, bf16, fp8, mxfp8, fp8_block, nvfp4, fp8_rowwise, mxfp4, O0, O1, "
       "O2, "
       "O3"},
      {"O4", "unknown recipe name 'O4'"},
      {"init_scale=1e999", "init_scale is '1e999'; allowed: a finite number > 0"},
      {"init_scale=1e39", "init_scale is '1e39'"},    // beyond float: refused, not rounded to infinity
      {"init_scale=1e-50", "init_scale is '1e-50'"},  // below float: refused, not rounded to 0
      {"recipe=fp16, init_scale=1e-40",
       "initial scale 9.99994610111476e-41 of scaling=dynamic is outside"},  // inverse inf
      {"init_scale=nan", "init_scale is 'nan'"},
      {"init_scale=-0", "init_scale is 0, it must be finite and > 0"},
      {"{\"init_scale\": 1e999}", "line 1, column 16: number 1e999 is out of the range of a double"},
      {"growth_interval=99999999999", "growth_interval is '99999999999'; allowed: an integer >= 1"},
      {"{\"growth_interval\": 3.5}", "growth_interval is '3.5'; allowed: an integer >= 1"},
      {"{\"growth_interval\": 2e3}", "growth_interval is '2e3'"},
      {"accumulation_steps=0", "accumulation_steps is 0; allowed: 1 to 65536"},
      {"scaling=static, static_scale=0", "static_scale is 0; allowed: a finite number > 0"},
      {"scaling=static, static_scale=-4", "static_scale is -4"},
      {"max_grad_norm=-1", "max_grad_norm is -1; allowed: a finite number >= 0"},
      {"precision=fp16, scaling=none", "safe=true: small fp16 gradients underflow"},
      {"recipe=fp8, master_weights=false", "allowed: master_weights=true"},
      {"autocast=true", "autocast=true needs a precision other than fp32"},
      {"recipe=O1, keep_batchnorm_fp32=true", "keep_batchnorm_fp32=true needs cast_model=true"},
      {"recipe=bf16, kahan_summation=true", "kahan_summation=true needs cast_model=true and master_weights=false"},
      {"recipe=O2, kahan_summation=true", "kahan_summation=true needs cast_model=true and master_weights=false"},
      {"recipe=bf16, cast_model=true, kahan_summation=true, stochastic_rounding=true",
       "kahan_summation=true with stochastic_rounding=true"},
      {"recipe=bf16, cast_model=true, kahan_summation=yes", "kahan_summation is 'yes'; allowed: true or false"},
      {"recipe=fp16, init_scale=4, min_scale=8", "initial scale 4 of scaling=dynamic is outside [min_scale 8"},
      {"reduce_dtype=fp8", "reduce_dtype is 'fp8'; allowed: fp32, bf16, fp16, e4m3, e5m2"},
      {"{\"reduce_dtype\": 16}", "reduce_dtype (line 1, column 18) is a number; allowed: a string, one of fp32, bf16"},
      {"bucket_bytes=3", "bucket_bytes is 3; allowed: 4 to 1073741824 (one float to 1 GiB)"},
      {"bucket_bytes=1073741825", "bucket_bytes is 1073741825; allowed: 4 to 1073741824"},
      {"weight_check_interval=-1", "weight_check_interval is -1; allowed: an integer >= 0 (0: never)"},
      {"recipe=fp8, margin=7", "margin is 7"},
      {"recipe=fp8, margin=abc", "margin is 'abc'; allowed: an integer in [-100, 6]"},
      {"init_scale=1, init_scale=2", "key 'init_scale' is given twice"},
      {"{\"init_scale\": 1, \"init_scale\": 2}", "duplicate key \"init_scale\""},
      {"init_scale", "unknown recipe name 'init_scale'"},  // no "=": read as a name
      {"precision=fp16 init_scale", "expected key=value at offset 15"},
      {"precision=", "key 'precision' has no value"},
      {"--init-scale", "flag --init-scale has no value"},
      {"--recipe fp16 stray", "expected a --flag, found 'stray'"},
      {"", "empty text; allowed: a recipe name"},
      {" \n\t", "empty text"},
      {std::string("fp16\0", 5), "NUL byte at offset 4"},
      {std::string("{\"recipe\": \"fp16\0\"}", 19), "NUL byte at offset 16"},
      {"{\"recipe\": \"fp16\"", "line 1, column 18: expected ',' or '}' in an object, found end of input"},
      {"{\"recipe\": \"fp1", "truncated: a string is not closed"},
      {"{\"recipe\": ", "truncated: a value is expected"},
      {"{\"recipe\": \"fp16\",}", "expected a quoted key, found '}'"},
      {"{\"init_scale\": 01}", "a number with a leading zero"},
      {"{\"init_scale\": +1}", "unexpected '+'"},
      {"{\"init_scale\": 1.}", "a '.' not followed by digits"},
      {"{\"init_scale\": NaN}", "unexpected 'N'"},
      {"{\"recipe\": \"fp16\"} x", "unexpected 'x' after the JSON value"},
      {"[1, 2]", "a JSON recipe is an object of keys; this one is an array"},
      {"{\"a\\u0000b\": 1}", "unknown key 'a?b'"},
      {"{\"recipe\": \"\\ud800\"}", "high surrogate not followed by a low one"},
      {"{\"recipe\": \"\\udc00\"}", "lone low surrogate"},
      {"{\"recipe\": \"\\q\"}", "unknown escape \\'q'"},
      {"{\"recipe\": \"\xff\"}", "invalid UTF-8"},
      {"{\"recipe\": \"\xc0\x80\"}", "invalid UTF-8"},  // an overlong NUL
      {"{\"recipe\": \"a\tb\"}", "raw control character"},
      {"{\n  \"recipe\": \"fp16\",\n  \"init_scale\": tru\n}", "line 3, column 17: unexpected 't'"},
  };
  for (const auto& c : cases) {
    INFO(c.first);
    const std::string message = error_of(c.first);
    INFO(message);
    CHECK(message.find(c.second) != std::string::npos);
  }
  CHECK_NOTHROW(parse_recipe("precision=fp16, scaling=none, safe=false"));
  CHECK(parse_recipe("max_grad_norm=-0").max_grad_norm == 0);
  CHECK_FALSE(std::signbit(parse_recipe("max_grad_norm=-0").max_grad_norm));  // -0 reads as 0
  CHECK(parse_recipe("{\"recipe\": \"fp8\", \"margin\": -0}").margin == 0);
  CHECK(parse_recipe("{\"recipe\": \"fp16\", \"init_scale\": 2.5E+2}").init_scale == 250.0f);
  CHECK(parse_recipe("{\"recipe\": \"\\u0066p16\"}").name == "fp16");  // escapes decode
}

TEST_CASE("hostile sizes are bounded: deep nesting, huge strings, huge documents", "[recipe]") {
  std::string deep = "{\"a\": ";
  for (int i = 0; i < 100000; ++i) deep += '[';
  CHECK(error_of(deep).find("nesting deeper than 32 levels") != std::string::npos);
  const std::string long_key = "{\"" + std::string(5000, 'k') + "\": 1}";
  CHECK(error_of(long_key).find("a string longer than 4096 bytes") != std::string::npos);
  std::string huge = "{\"recipe\": \"fp16\"" + std::string(std::size_t{1} << 20, ' ') + "}";
  CHECK(error_of(huge).find("the limit is 1048576") != std::string::npos);
  std::string wide = "[";
  for (int i = 0; i < 2000; ++i) wide += "1,";
  wide += "1]";
  CHECK(error_of(wide).find("an array with more than 1024 items") != std::string::npos);
  CHECK(error_of(std::string(100000, 'x')).find("unknown recipe name 'xxxx") != std::string::npos);
}

TEST_CASE("recipe files: JSON or key=value; missing and truncated files are clear errors", "[recipe]") {
  const std::string path = "recipe_test_config.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << "{\n  \"recipe\": \"bf16\",\n  \"max_grad_norm\": 1.0,\n  \"accumulation_steps\": 4\n}\n";
  }
  const recipe r = parse_recipe_file(path);
  CHECK(r.name == "bf16");
  CHECK(r.accumulation_steps == 4);
  {
    std::ofstream out(path, std::ios::binary);
    out << "{\n  \"recipe\": \"bf16\",\n  \"max_grad_n";
  }
  try {
    parse_recipe_file(path);
    FAIL("a truncated file was accepted");
  } catch (const recipe_error& e) {
    CHECK(std::string(e.what()).find("recipe file 'recipe_test_config.json': JSON recipe, line 3") !=
          std::string::npos);
  }
  std::remove(path.c_str());
  CHECK_THROWS_WITH(parse_recipe_file("no/such/recipe.json"), Catch::Contains("cannot be opened"));
}

namespace {

// main's arguments: argv[0] = "train", then `args`.
struct command_line {
  std::vector<std::string> args;
  std::vector<const char*> argv;
  explicit command_line(std::vector<std::string> a) : args(std::move(a)) {
    argv.push_back("train");
    for (const std::string& s : args) argv.push_back(s.c_str());
  }
  int argc() const { return static_cast<int>(argv.size()); }
};

recipe_args known(const std::vector<std::string>& args, std::string_view prefix = {}) {
  const command_line c(args);
  return parse_known_recipe_args(c.argc(), c.argv.data(), 1, prefix);
}

recipe strict(const std::vector<std::string>& args) {
  const command_line c(args);
  return parse_recipe_args(c.argc(), c.argv.data());
}

template <class Parse>
std::string error_from(Parse&& parse) {
  try {
    parse();
  } catch (const recipe_error& e) {
    return e.what();
  }
  return "(accepted)";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace

TEST_CASE("parse_known_recipe_args takes the recipe's flags and leaves the program's others in order", "[recipe]") {
  const recipe_args a = known({"--epochs", "10", "--recipe", "bf16", "data.csv", "--autocast", "--verbose",
                               "--max-grad-norm=1.5", "-v", "--growth-interval", "100", "--help"});
  CHECK(a.parsed.name == "bf16");
  CHECK(a.parsed.autocast);
  CHECK(a.parsed.max_grad_norm == 1.5);
  CHECK(a.parsed.growth_interval == 100);
  CHECK(a.rest == std::vector<std::string>{"--epochs", "10", "data.csv", "--verbose", "-v", "--help"});
  // The same recipe flags alone: the strict parser agrees, and nothing is left over.
  const recipe_args only = known({"--recipe", "bf16", "--autocast", "--max-grad-norm=1.5", "--growth-interval", "100"});
  CHECK(only.rest.empty());
  CHECK(to_string(only.parsed) == to_string(a.parsed));
  CHECK(to_string(strict({"--recipe", "bf16", "--autocast", "--max-grad-norm=1.5", "--growth-interval", "100"})) ==
        to_string(a.parsed));
  // No recipe flag at all: fp32, every argument returned.
  const recipe_args none = known({"--lr", "0.1", "in.csv"});
  CHECK(to_string(none.parsed) == to_string(recipes::fp32()));
  CHECK(none.rest == std::vector<std::string>{"--lr", "0.1", "in.csv"});
  CHECK(known({}).rest.empty());

  // A bare boolean takes the next argument only when it is true or false: a program's file stays.
  const recipe_args bare = known({"--recipe", "O2", "--cast-model", "data.csv"});
  CHECK(bare.parsed.cast_model);
  CHECK(bare.rest == std::vector<std::string>{"data.csv"});
  const recipe_args given = known({"--recipe", "fp16", "--autocast", "false", "data.csv"});
  CHECK_FALSE(given.parsed.autocast);
  CHECK(given.rest == std::vector<std::string>{"data.csv"});

  // "--" ends the recipe's flags; it and everything after it go to the program untouched.
  const recipe_args ended = known({"--recipe", "fp16", "--", "--init-scale", "5", "x"});
  CHECK(ended.parsed.init_scale == 65536.0f);
  CHECK(ended.rest == std::vector<std::string>{"--", "--init-scale", "5", "x"});

  // A prefix keeps the program's own --seed and --precision the program's.
  const recipe_args prefixed = known(
      {"--seed", "7", "--amp-recipe", "fp8", "--amp_seed", "3", "--amp-stochastic-rounding", "--precision", "fp16"},
      "amp-");
  CHECK(prefixed.parsed.name == "fp8");
  CHECK(prefixed.parsed.seed == 3);
  CHECK(prefixed.parsed.stochastic_rounding);
  CHECK(prefixed.rest == std::vector<std::string>{"--seed", "7", "--precision", "fp16"});

  // Arguments before `first` (a subcommand) are neither read nor returned.
  const command_line sub({"fit", "--recipe", "bf16", "--lr", "1"});
  const recipe_args from_sub = parse_known_recipe_args(sub.argc(), sub.argv.data(), 2);
  CHECK(from_sub.parsed.name == "bf16");
  CHECK(from_sub.rest == std::vector<std::string>{"--lr", "1"});

  // The strict parser still refuses what is not the recipe's.
  CHECK(error_from([] {
          strict({"--recipe", "bf16", "--epochs", "3"});
        }).find("unknown key 'epochs'") != std::string::npos);
  CHECK(error_from([] {
          strict({"--recipe", "bf16", "data.csv"});
        }).find("expected a --flag, found 'data.csv'") != std::string::npos);
}

TEST_CASE("parse_known_recipe_args: a recipe flag with a bad or missing value is an error naming it", "[recipe]") {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--epochs", "3", "--init-scale", "abc"}, "init_scale is 'abc'; allowed: a finite number > 0"},
      {{"--init-scale=1e39", "x"}, "init_scale is '1e39'"},
      {{"--precision", "fp12", "--lr", "1"},
       "precision is 'fp12'; allowed: fp32, fp16, bf16, fp8, mxfp8, fp8_block, nvfp4, fp8_rowwise, mxfp4"},
      {{"--autocast=yes"}, "autocast is 'yes'; allowed: true or false"},
      {{"--epochs", "3", "--precision"}, "flag --precision has no value"},
      {{"--init-scale", "--epochs", "3"}, "flag --init-scale has no value"},
      {{"--recipe", "O4"}, "unknown recipe name 'O4'"},
      {{"--seed", "1", "--seed=2"}, "key 'seed' is given twice"},
      {{"--precision", "fp16", "--scaling", "none"}, "safe=true: small fp16 gradients underflow"},
      {{"--recipe-file"}, "flag --recipe-file has no value"},
      {{"--recipe-file="}, "flag --recipe-file has no value"},
      {{"--recipe-file", "a.json", "--recipe_file=b.json"}, "flag --recipe_file is given twice"},
      {{"--recipe-file", "no/such/recipe.json"}, "recipe file 'no/such/recipe.json' cannot be opened"},
  };
  for (const auto& c : cases) {
    INFO(c.second);
    const std::string message = error_from([&] { known(c.first); });
    INFO(message);
    CHECK(message.find(c.second) != std::string::npos);
    const std::string strict_message = error_from([&] { strict(c.first); });
    INFO(strict_message);
    CHECK(strict_message != "(accepted)");  // the strict parser refuses each too
  }
  CHECK_THROWS_WITH(parse_known_recipe_args(2, nullptr), Catch::Contains("argv is null with argc = 2"));
  const command_line c({"--recipe", "bf16"});
  CHECK_THROWS_WITH(parse_recipe_args(c.argc(), c.argv.data(), -1), Catch::Contains("first is -1; allowed: >= 0"));
  CHECK(parse_known_recipe_args(0, nullptr).rest.empty());
}

TEST_CASE("--recipe-file: the file's values first, the command line's over them, wherever the flag stands",
          "[recipe]") {
  const std::string pairs = "recipe_test_layers.txt", json = "recipe_test_layers.json";
  write_file(pairs, "recipe=fp16, init_scale=1024, growth_interval=100\n");
  write_file(json, "{\"recipe\": \"fp16\", \"init_scale\": 1024, \"growth_interval\": 100}\n");
  for (const std::string& path : {pairs, json}) {
    INFO(path);
    // The file alone.
    const recipe file_only = strict({"--recipe-file", path});
    CHECK(file_only.name == "fp16");
    CHECK(file_only.init_scale == 1024.0f);
    CHECK(file_only.growth_interval == 100);
    // An explicit flag wins, before or after --recipe-file.
    for (const recipe& r : {strict({"--init-scale", "512", "--recipe-file", path}),
                            strict({"--recipe-file=" + path, "--init-scale=512"})}) {
      CHECK(r.name == "fp16");
      CHECK(r.init_scale == 512.0f);
      CHECK(r.growth_interval == 100);  // the file's other keys stay
    }
    // --recipe replaces the file's base; the file's keys still apply over the new base.
    const recipe o2 = strict({"--recipe", "O2", "--recipe-file", path});
    CHECK(o2.name == "O2");
    CHECK(o2.master_weights);
    CHECK(o2.cast_model);
    CHECK(o2.init_scale == 1024.0f);
    // Among the program's flags, with a prefix.
    const recipe_args a = known({"--epochs", "3", "--amp-recipe-file", path, "--lr", "0.1", "--amp-max-grad-norm", "2",
                                 "--amp-growth-interval=7"},
                                "amp-");
    CHECK(a.parsed.name == "fp16");
    CHECK(a.parsed.max_grad_norm == 2.0);
    CHECK(a.parsed.growth_interval == 7);
    CHECK(a.parsed.init_scale == 1024.0f);
    CHECK(a.rest == std::vector<std::string>{"--epochs", "3", "--lr", "0.1"});
  }
  // Only the combination must be valid: the file's fp16 without scaling, completed by the flag.
  write_file(pairs, "precision=fp16 autocast=true");
  CHECK(error_from([&] {
          strict({"--recipe-file", pairs});
        }).find("small fp16 gradients underflow") != std::string::npos);
  CHECK(strict({"--recipe-file", pairs, "--scaling", "dynamic"}).scaling == loss_scaling_mode::dynamic);
  // A key may be given once in the file and once on the command line, not twice in either.
  write_file(pairs, "recipe=bf16, seed=1, seed=2");
  CHECK(error_from([&] {
          strict({"--recipe-file", pairs, "--seed", "3"});
        }).find("recipe file 'recipe_test_layers.txt': recipe: key 'seed' is given twice") != std::string::npos);
  // Errors in the file's own text name the file, even for a key the command line overrides.
  write_file(pairs, "recipe=fp16, init_scale=abc");
  CHECK(error_from([&] {
          known({"--recipe-file", pairs, "--init-scale", "4"});
        }).find("recipe file 'recipe_test_layers.txt': recipe: init_scale is 'abc'") != std::string::npos);
  write_file(json, "{\"recipe\": \"fp16\", \"init_scale\": tru}");
  CHECK(error_from([&] {
          known({"--recipe-file", json});
        }).find("recipe file 'recipe_test_layers.json': JSON recipe, line 1, column 34") != std::string::npos);
  // A file cannot name another file, and text never reads one.
  write_file(pairs, "recipe=fp16, recipe_file=other.json");
  CHECK(error_from([&] { strict({"--recipe-file", pairs}); }).find("unknown key 'recipe_file'") != std::string::npos);
  CHECK(error_of("--recipe-file " + pairs).find("unknown key 'recipe_file'") != std::string::npos);
  std::remove(pairs.c_str());
  std::remove(json.c_str());
}
