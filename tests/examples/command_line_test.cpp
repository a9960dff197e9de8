#include "common/command_line.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace mixprec_example;

namespace {

struct parsed {
  bool quick = false;
  std::string svg;
  std::string precision = "fp32";
  long epochs = 10;
};

// Parses `arguments` (after the program name) into a fresh set of options.
bool parse(const std::vector<std::string>& arguments, parsed& out) {
  command_line options("demo", "A demonstration.");
  options.flag("--quick", "small sizes", out.quick);
  options.value("--svg", "FILE", "chart file", out.svg);
  options.choice("--precision", {"fp32", "fp16", "bf16"}, "precision", out.precision);
  options.integer("--epochs", "N", "epochs", 1, 1000, out.epochs);
  std::vector<const char*> argv = {"demo"};
  for (const std::string& a : arguments) argv.push_back(a.c_str());
  return options.parse(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(const std::vector<std::string>& arguments) {
  parsed p;
  try {
    parse(arguments, p);
  } catch (const usage_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("options take their values after a space or after '='") {
  parsed p;
  REQUIRE(parse({"--quick", "--svg", "a.svg", "--precision=bf16", "--epochs", "25"}, p));
  CHECK(p.quick);
  CHECK(p.svg == "a.svg");
  CHECK(p.precision == "bf16");
  CHECK(p.epochs == 25);
  parsed defaults;
  REQUIRE(parse({}, defaults));
  CHECK_FALSE(defaults.quick);
  CHECK(defaults.precision == "fp32");
  CHECK(defaults.epochs == 10);
}

TEST_CASE("mistakes are usage errors that name the option and what it accepts") {
  using Catch::Matchers::Contains;
  CHECK_THAT(error_of({"--bogus"}), Contains("unknown option '--bogus'"));
  CHECK_THAT(error_of({"--svg"}), Contains("--svg needs a value (--svg FILE)"));
  CHECK_THAT(error_of({"--quick=yes"}), Contains("--quick takes no value"));
  CHECK_THAT(error_of({"--precision", "fp7"}), Contains("'fp7' is not one of fp32, fp16 or bf16"));
  CHECK_THAT(error_of({"--epochs", "-3"}), Contains("'-3' is not a whole number in 1..1000"));
  CHECK_THAT(error_of({"--epochs", "1001"}), Contains("1..1000"));
  CHECK_THAT(error_of({"--epochs", "12x"}), Contains("'12x'"));
  CHECK_THAT(error_of({"positional"}), Contains("unknown option 'positional'"));
}

TEST_CASE("--help lists every option and stops the program") {
  parsed p;
  CHECK_FALSE(parse({"--help"}, p));
  command_line options("demo", "A demonstration.");
  bool flag = false;
  std::string value;
  options.flag("--quick", "small sizes", flag);
  options.value("--svg", "FILE", "chart file", value);
  const std::string help = options.help();
  CHECK_THAT(help, Catch::Matchers::StartsWith("usage: demo [options]\n\nA demonstration.\n"));
  CHECK_THAT(help, Catch::Matchers::Contains("  --quick     small sizes\n"));
  CHECK_THAT(help, Catch::Matchers::Contains("  --svg FILE  chart file\n"));
  CHECK_THAT(help, Catch::Matchers::Contains("  --help      this text\n"));
}

TEST_CASE("run_example turns usage errors into status 2 and other failures into status 1") {
  CHECK(run_example("demo", [] { return 0; }) == 0);
  CHECK(run_example("demo", []() -> int { throw usage_error("bad option"); }) == 2);
  CHECK(run_example("demo", []() -> int { throw std::runtime_error("no file"); }) == 1);
}
