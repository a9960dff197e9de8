// Command-line options for the examples: declared once, parsed with clear errors, listed by
// --help.
//
//   bool quick = false;
//   std::string svg;
//   int epochs = 10;
//   command_line options("format_comparison", "Compares the formats' range, precision and speed.");
//   options.flag("--quick", "small sizes, for tests", quick);
//   options.value("--svg", "FILE", "write the chart to FILE", svg);
//   options.integer("--epochs", "N", "training epochs", 1, 1000, epochs);
//   if (!options.parse(argc, argv)) return 0;  // --help was printed
//
// Values follow their option as the next argument or after '=' ("--svg out.svg",
// "--svg=out.svg").  Mistakes throw usage_error, whose message names the option and what it
// accepts; run_example() turns it into a message on stderr and exit status 2.
#pragma once

#include <mixprec/errors.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "text.hpp"

namespace mixprec_example {

// A command line the program cannot follow.
class usage_error : public mixprec::error {
 public:
  using mixprec::error::error;
};

class command_line {
 public:
  command_line(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

  // An option without a value: present or not.
  void flag(const std::string& name, const std::string& help, bool& target) {
    add(name, "", help, [&target](const std::string&) { target = true; });
  }

  // An option with a free-form value.
  void value(const std::string& name, const std::string& value_name, const std::string& help, std::string& target) {
    add(name, value_name, help, [&target](const std::string& v) { target = v; });
  }

  // An option whose value is one of `allowed`.
  void choice(const std::string& name, const std::vector<std::string>& allowed, const std::string& help,
              std::string& target) {
    std::string value_name;
    for (const std::string& a : allowed) value_name += (value_name.empty() ? "" : "|") + a;
    add(name, value_name, help, [name, allowed, &target](const std::string& v) {
      for (const std::string& a : allowed) {
        if (v == a) {
          target = v;
          return;
        }
      }
      throw usage_error(name + ": '" + v + "' is not one of " + one_of(allowed));
    });
  }

  // An option whose value is a whole number in [min, max].
  void integer(const std::string& name, const std::string& value_name, const std::string& help, long min, long max,
               long& target) {
    add(name, value_name, help, [name, min, max, &target](const std::string& v) {
      long parsed = 0;
      const auto [end, status] = std::from_chars(v.data(), v.data() + v.size(), parsed);
      if (status != std::errc() || end != v.data() + v.size() || parsed < min || parsed > max) {
        throw usage_error(name + ": '" + v + "' is not a whole number in " + std::to_string(min) + ".." +
                          std::to_string(max));
      }
      target = parsed;
    });
  }

  // Applies the arguments; false when --help (or -h) was given and the help was printed.
  bool parse(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
      std::string argument = argv[i];
      if (argument == "--help" || argument == "-h") {
        std::fputs(help().c_str(), stdout);
        return false;
      }
      std::string attached;
      bool has_attached = false;
      const std::size_t equals = argument.find('=');
      if (argument.compare(0, 2, "--") == 0 && equals != std::string::npos) {
        attached = argument.substr(equals + 1);
        argument.resize(equals);
        has_attached = true;
      }
      const option* o = find(argument);
      if (o == nullptr) throw usage_error("unknown option '" + argument + "'");
      if (o->value_name.empty()) {
        if (has_attached) throw usage_error(argument + " takes no value");
        o->apply("");
      } else if (has_attached) {
        o->apply(attached);
      } else if (i + 1 < argc) {
        o->apply(argv[++i]);
      } else {
        throw usage_error(argument + " needs a value (" + argument + " " + o->value_name + ")");
      }
    }
    return true;
  }

  std::string help() const {
    std::string text = "usage: " + program_ + " [options]\n\n" + summary_ + "\n\noptions:\n";
    std::vector<std::string> left;
    std::size_t width = std::string("--help").size();
    for (const option& o : options_) {
      left.push_back(o.name + (o.value_name.empty() ? "" : " " + o.value_name));
      width = std::max(width, left.back().size());
    }
    for (std::size_t i = 0; i < options_.size(); ++i) {
      text += "  " + left[i] + std::string(width - left[i].size() + 2, ' ') + options_[i].help + "\n";
    }
    return text + "  --help" + std::string(width - 6 + 2, ' ') + "this text\n";
  }

 private:
  struct option {
    std::string name;
    std::string value_name;  // empty for a flag
    std::string help;
    std::function<void(const std::string&)> apply;
  };

  void add(const std::string& name, const std::string& value_name, const std::string& help,
           std::function<void(const std::string&)> apply) {
    options_.push_back(option{name, value_name, help, std::move(apply)});
  }

  const option* find(const std::string& name) const {
    for (const option& o : options_) {
      if (o.name == name) return &o;
    }
    return nullptr;
  }

  std::string program_;
  std::string summary_;
  std::vector<option> options_;
};

// Runs an example's body: a usage_error becomes "<program>: <message>" and a pointer to --help
// on stderr, exit status 2; any other exception "<program>: <message>", exit status 1.
inline int run_example(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", program, e.what(), program);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace mixprec_example
