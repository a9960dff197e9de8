#include "common/svg_chart.hpp"

#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace mixprec_example;

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// A small well-formedness check (XML 1.0 section 2.1): after the declaration, every '<' opens a
// tag whose attribute values are quoted, end tags close the innermost open element, text holds
// no '<' and '&' only as the five predefined entities, and exactly one root element remains.
// (The example tests also parse the output of format_comparison with Python's XML parser.)
bool well_formed(const std::string& xml, std::string& problem) {
  std::size_t i = xml.find("?>");
  if (xml.compare(0, 5, "<?xml") != 0 || i == std::string::npos) return problem = "no XML declaration", false;
  i += 2;
  std::vector<std::string> open;
  int roots = 0;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      bool entity = false;
      for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
        entity = entity || xml.compare(i, std::strlen(e), e) == 0;
      if (!entity) return problem = "bare & at " + std::to_string(i), false;
      ++i;
      continue;
    }
    if (xml[i] != '<') {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[i])))
        return problem = "text outside the root", false;
      ++i;
      continue;
    }
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return problem = "unclosed tag", false;
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (!tag.empty() && tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return problem = "mismatched </" + tag.substr(1) + ">", false;
      open.pop_back();
      continue;
    }
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (self_closing) tag.pop_back();
    if (count_of(tag, "\"") % 2 != 0 || tag.find('<') != std::string::npos) return problem = "bad tag " + tag, false;
    const std::string name = tag.substr(0, tag.find_first_of(" \n"));
    if (open.empty()) ++roots;
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return problem = "<" + open.back() + "> not closed", false;
  if (roots != 1) return problem = std::to_string(roots) + " root elements", false;
  return true;
}

line_chart error_chart() {
  line_chart chart{
      "Error <vs> n & \"friends\"", {"n", axis_scale::logarithmic}, {"error", axis_scale::logarithmic}, {}};
  chart.series.push_back({"float16", {10, 100, 1000}, {1e-4, 3e-4, 2e-3}});
  chart.series.push_back({"fp8 'e4m3'", {10, 100, 1000}, {0.01, 0.0, 0.9}});  // 0 cannot show on a log axis
  return chart;
}

}  // namespace

TEST_CASE("a figure is well-formed XML with its text escaped") {
  const std::string svg = svg_figure("A <title> & more", {error_chart(), error_chart()});
  std::string problem;
  CHECK(well_formed(svg, problem));
  INFO(problem);
  CHECK(svg.find("A &lt;title&gt; &amp; more") != std::string::npos);
  CHECK(svg.find("Error &lt;vs&gt; n &amp; &quot;friends&quot;") != std::string::npos);
  CHECK(svg.find("fp8 &apos;e4m3&apos;") != std::string::npos);
  CHECK(count_of(svg, "<g transform=\"translate(") == 2);
  CHECK(svg.find("xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
}

TEST_CASE("the well-formedness check catches broken documents") {
  std::string problem;
  CHECK_FALSE(well_formed("<?xml version=\"1.0\"?>\n<svg><g></svg>", problem));
  CHECK_FALSE(well_formed("<?xml version=\"1.0\"?>\n<svg>a & b</svg>", problem));
  CHECK_FALSE(well_formed("<?xml version=\"1.0\"?>\n<svg/><svg/>", problem));
  CHECK(well_formed("<?xml version=\"1.0\"?>\n<svg><g a=\"1\"/>x &amp; y</svg>", problem));
}

TEST_CASE("points a logarithmic axis cannot show break the line") {
  line_chart chart = error_chart();
  chart.series.resize(1);
  chart.series[0].y = {1e-4, 0.0, 2e-3, NAN, 3e-3, 4e-3};
  chart.series[0].x = {1, 2, 3, 4, 5, 6};
  const std::string svg = svg_figure("", {chart});
  // Three pieces: [1], [3], [5, 6]; four dots.
  CHECK(count_of(svg, "<circle") == 4);
  const std::size_t path = svg.find("<path d=\"");
  REQUIRE(path != std::string::npos);
  const std::string d = svg.substr(path, svg.find('"', path + 9) - path);
  CHECK(count_of(d, "M") == 3);
  CHECK(count_of(d, " L") == 1);
}

TEST_CASE("logarithmic axes are labelled in whole decades") {
  const std::string svg = svg_figure("", {error_chart()});
  // y from 1e-4 to 0.9: decades -4 .. 0; x from 10 to 1000: decades 1 .. 3.
  for (const char* label : {">-4</tspan>", ">-1</tspan>", ">0</tspan>", ">1</tspan>", ">3</tspan>"}) {
    CHECK(svg.find(label) != std::string::npos);
  }
  CHECK(svg.find(">-5</tspan>") == std::string::npos);
  CHECK(svg.find(">4</tspan>") == std::string::npos);
}

TEST_CASE("linear axes get 1-2-5 ticks around the data") {
  const detail::axis_span span = detail::fit_axis({0.3, 9.6}, axis_scale::linear);
  CHECK(span.low == 0);
  CHECK(span.high == 10);
  CHECK(span.ticks == std::vector<double>{0, 2, 4, 6, 8, 10});
  const detail::axis_span single = detail::fit_axis({5, 5}, axis_scale::linear);
  CHECK(single.low < 5);
  CHECK(single.high > 5);
}

TEST_CASE("a chart with nothing to draw is still a valid document that says so") {
  line_chart empty{"nothing", {"x", axis_scale::logarithmic}, {"y", axis_scale::logarithmic}, {}};
  empty.series.push_back({"zeros", {1, 2}, {0, 0}});
  const std::string svg = svg_figure("", {empty});
  std::string problem;
  CHECK(well_formed(svg, problem));
  CHECK(svg.find("no drawable points") != std::string::npos);
  CHECK(svg.find("<path") == std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
}

TEST_CASE("series keep their colour from panel to panel, and dash after the tenth") {
  CHECK(detail::series_colour(0) == detail::series_colour(10));
  CHECK(detail::series_colour(0) != detail::series_colour(1));
  CHECK(detail::series_stroke(3).find("dasharray") == std::string::npos);
  CHECK(detail::series_stroke(13).find("dasharray") != std::string::npos);
}

TEST_CASE("event series: marks without a line, labels that do not overlap, tooltips") {
  line_chart chart{"events", {"step", axis_scale::linear}, {"scale", axis_scale::logarithmic}, {}};
  chart.series.push_back({"scale", {0, 1, 2, 3, 100}, {65536, 32768, 16384, 8192, 8192}});
  chart_series skipped{"skipped", {0, 1, 2, 100}, {8192, 8192, 8192, 8192}};
  skipped.points_only = true;
  skipped.labels = {"fc3.weight", "fc3.weight", "fc2 <bias>", "fc1.weight"};
  chart.series.push_back(skipped);
  const std::string svg = svg_figure("", {chart});
  std::string problem;
  CHECK(well_formed(svg, problem));
  INFO(problem);
  CHECK(count_of(svg, "<path d=") == 1);  // the line series only
  CHECK(count_of(svg, "<title>") == 4);   // every mark has its tooltip
  CHECK(svg.find("fc2 &lt;bias&gt;") != std::string::npos);
  // Steps 0, 1, 2 lie a few pixels apart at one height: only the first one's label is written.
  CHECK(count_of(svg, "font-size=\"10\">") == 2);
  CHECK(count_of(svg, "font-size=\"10\">fc3.weight") == 1);
  CHECK(count_of(svg, "font-size=\"10\">fc1.weight") == 1);
}
