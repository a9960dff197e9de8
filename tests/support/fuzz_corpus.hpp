// Corpus files for the fuzz drivers that run libFuzzer targets without libFuzzer
// (tests/session/recipe_fuzz_driver.cpp, tests/io/parse_fuzz_driver.cpp): the inputs kept in the
// repository (tests/fuzz_corpus/<target>/) are read back and replayed on every compiler, and a
// driver's seeds can be written out as a starting corpus.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fuzz_corpus {

// Every regular file of `dir`, in name order (the same order on every run).
inline std::vector<std::string> read_all(const std::string& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> out;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

// Writes inputs[i] to dir/<prefix><i>; false (with a message) if a file cannot be written.
inline bool write_all(const std::string& dir, const std::string& prefix, const std::vector<std::string>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string path = dir + "/" + prefix + std::to_string(i);
    std::ofstream out(path, std::ios::binary);
    out.write(inputs[i].data(), static_cast<std::streamsize>(inputs[i].size()));
    if (!out.flush()) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return false;
    }
  }
  return true;
}

// A driver's command line: [iterations [seed]] [--corpus DIR] [--write-corpus DIR].
struct driver_options {
  std::uint64_t iterations = 100000, seed = 1;
  std::string corpus, write_corpus;
};

inline driver_options parse_driver_options(int argc, char** argv) {
  driver_options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--corpus" || arg == "--write-corpus") && i + 1 < argc) {
      (arg == "--corpus" ? o.corpus : o.write_corpus) = argv[++i];
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() > 0) o.iterations = std::strtoull(positional[0].c_str(), nullptr, 10);
  if (positional.size() > 1) o.seed = std::strtoull(positional[1].c_str(), nullptr, 10);
  return o;
}

// Runs every input kept in dir (when dir is given) through run(input), and says how many.
template <class Run>
void replay(const std::string& dir, const char* driver, Run run) {
  if (dir.empty()) return;
  const std::vector<std::string> kept = read_all(dir);
  for (const std::string& input : kept) run(input);
  std::printf("%s: replayed %zu corpus inputs from %s\n", driver, kept.size(), dir.c_str());
}

}  // namespace fuzz_corpus
