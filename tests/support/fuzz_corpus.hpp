// Corpus files for the fuzz drivers that run libFuzzer targets without libFuzzer
// (tests/session/recipe_fuzz_driver.cpp, tests/io/parse_fuzz_driver.cpp): the inputs kept in the
// repository (tests/fuzz_corpus/<target>/) are read back and replayed on every compiler, and a
// driver's seeds can be written out as a starting corpus.
#pragma once

#include <algorithm>
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

}  // namespace fuzz_corpus
