// Line charts as standalone SVG files, with no library: several series per chart, linear or
// logarithmic axes, a legend, titles, and several charts (panels) side by side in one figure.
//
//   line_chart chart{"Sum of n values", {"n", axis_scale::logarithmic}, {"relative error", axis_scale::logarithmic}};
//   chart.series.push_back({"float16", {10, 100, 1000}, {1e-4, 3e-4, 2e-3}});
//   write_text_file("error.svg", svg_figure("Accumulation error", {chart}));
//
// Points that an axis cannot show (NaN, infinities, and zero or negative values on a logarithmic
// axis) are left out, and the series' line is broken there.  Series i has the same colour in
// every panel, so a series that stands for the same thing in several panels is easy to follow.
// Text is escaped for XML; the output is a well-formed SVG 1.1 document.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace mixprec_example {

enum class axis_scale { linear, logarithmic };

struct chart_axis {
  std::string label;
  axis_scale scale = axis_scale::linear;
};

struct chart_series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;  // y[i] belongs to x[i]; extra values of the longer vector are ignored
  // Events rather than a line: larger marks, no line between them, and labels[i] (if given)
  // written beside point i, unless it would overlap a label already written in the panel (every
  // label is also the point's tooltip).
  std::vector<std::string> labels = {};
  bool points_only = false;
};

struct line_chart {
  std::string title;
  chart_axis x_axis;
  chart_axis y_axis;
  std::vector<chart_series> series;
};

struct figure_layout {
  int columns = 2;  // panels per row
  int panel_width = 600;
  int panel_height = 400;
};

namespace detail {

inline std::string xml_escaped(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&apos;";
        break;
      default:
        // XML 1.0 forbids control characters other than tab, line feed and carriage return.
        escaped += static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : c;
    }
  }
  return escaped;
}

// Coordinates with one decimal: a tenth of a pixel is below what a screen shows.
inline std::string pixels(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

inline bool drawable(double value, axis_scale scale) {
  return std::isfinite(value) && (scale == axis_scale::linear || value > 0);
}

// The span an axis shows, in axis units (log10 of the value on a logarithmic axis), and where
// its ticks go.
struct axis_span {
  axis_scale scale;
  double low;
  double high;
  std::vector<double> ticks;  // in axis units

  double unit(double value) const { return scale == axis_scale::logarithmic ? std::log10(value) : value; }
  // Where an axis unit lies between the ends of the axis, from 0 to 1.
  double fraction(double unit_value) const { return (unit_value - low) / (high - low); }
};

// The values' range widened to whole decades (logarithmic) or to multiples of a 1-2-5 step
// giving about five ticks (linear).
inline axis_span fit_axis(const std::vector<double>& values, axis_scale scale) {
  double low = HUGE_VAL, high = -HUGE_VAL;
  for (const double v : values) {
    if (!drawable(v, scale)) continue;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  axis_span span{scale, 0, 1, {}};
  if (scale == axis_scale::logarithmic) {
    if (low > high) low = high = 1;  // nothing to draw: one decade
    span.low = std::floor(std::log10(low));
    span.high = std::max(std::ceil(std::log10(high)), span.low + 1);
    const double step = std::ceil((span.high - span.low) / 8);  // at most about 8 labelled decades
    for (double t = span.low; t <= span.high; t += step) span.ticks.push_back(t);
    return span;
  }
  if (low > high) low = 0, high = 1;
  if (low == high) low -= 1, high += 1;
  const double rough = (high - low) / 5;
  const double decade = std::pow(10, std::floor(std::log10(rough)));
  const double step = rough / decade < 1.5 ? decade : rough / decade < 3.5 ? 2 * decade : 5 * decade;
  span.low = std::floor(low / step) * step;
  span.high = std::ceil(high / step) * step;
  for (double t = span.low; t <= span.high + step / 2; t += step) span.ticks.push_back(t);
  return span;
}

// "10" with the exponent raised, on logarithmic axes; %g on linear ones.
inline std::string tick_label(double tick, axis_scale scale) {
  char text[32];
  if (scale == axis_scale::logarithmic) {
    std::snprintf(text, sizeof text, "%d", static_cast<int>(std::lround(tick)));
    return std::string("10<tspan dy=\"-6\" font-size=\"9\">") + text + "</tspan>";
  }
  std::snprintf(text, sizeof text, "%g", std::fabs(tick) < 1e-12 ? 0.0 : tick);
  return text;
}

// Tableau 10, a palette whose colours stay apart for most colour-vision deficiencies; series
// beyond the tenth reuse it with dashed lines.
inline std::string series_colour(std::size_t i) {
  static const char* const colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f"};
  return colours[i % 10];
}
inline std::string series_stroke(std::size_t i) {
  return "stroke=\"" + series_colour(i) + "\"" + (i >= 10 ? " stroke-dasharray=\"6 3\"" : "");
}

// One chart, drawn in the rectangle [0, width] x [0, height] of the current coordinate system.
inline std::string svg_panel(const line_chart& chart, int width, int height) {
  constexpr double left = 72, top = 34, bottom = 52, legend_width = 170;
  const double plot_left = left, plot_right = width - legend_width, plot_top = top, plot_bottom = height - bottom;

  std::vector<double> xs, ys;
  for (const chart_series& s : chart.series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  const axis_span x_span = fit_axis(xs, chart.x_axis.scale);
  const axis_span y_span = fit_axis(ys, chart.y_axis.scale);
  // Pixel positions of axis units (ticks) and of values (points).
  const auto unit_x = [&](double u) { return plot_left + x_span.fraction(u) * (plot_right - plot_left); };
  const auto unit_y = [&](double u) { return plot_bottom - y_span.fraction(u) * (plot_bottom - plot_top); };
  const auto to_x = [&](double value) { return unit_x(x_span.unit(value)); };
  const auto to_y = [&](double value) { return unit_y(y_span.unit(value)); };

  std::string svg;
  svg += "<text x=\"" + pixels((plot_left + plot_right) / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" +
         xml_escaped(chart.title) + "</text>\n";
  // Grid lines and tick labels.
  for (const double t : x_span.ticks) {
    const std::string x = pixels(unit_x(t));
    svg += "<line x1=\"" + x + "\" y1=\"" + pixels(plot_top) + "\" x2=\"" + x + "\" y2=\"" + pixels(plot_bottom) +
           "\" stroke=\"#dddddd\"/>\n";
    svg += "<text x=\"" + x + "\" y=\"" + pixels(plot_bottom + 18) + "\" text-anchor=\"middle\">" +
           tick_label(t, x_span.scale) + "</text>\n";
  }
  for (const double t : y_span.ticks) {
    const std::string y = pixels(unit_y(t));
    svg += "<line x1=\"" + pixels(plot_left) + "\" y1=\"" + y + "\" x2=\"" + pixels(plot_right) + "\" y2=\"" + y +
           "\" stroke=\"#dddddd\"/>\n";
    svg += "<text x=\"" + pixels(plot_left - 6) + "\" y=\"" + pixels(unit_y(t) + 4) + "\" text-anchor=\"end\">" +
           tick_label(t, y_span.scale) + "</text>\n";
  }
  svg += "<rect x=\"" + pixels(plot_left) + "\" y=\"" + pixels(plot_top) + "\" width=\"" +
         pixels(plot_right - plot_left) + "\" height=\"" + pixels(plot_bottom - plot_top) +
         "\" fill=\"none\" stroke=\"#444444\"/>\n";
  // Axis labels.
  svg += "<text x=\"" + pixels((plot_left + plot_right) / 2) + "\" y=\"" + pixels(height - 10.0) +
         "\" text-anchor=\"middle\">" + xml_escaped(chart.x_axis.label) + "</text>\n";
  svg += "<text transform=\"translate(16 " + pixels((plot_top + plot_bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + xml_escaped(chart.y_axis.label) + "</text>\n";

  // The series: a path broken at points the axes cannot show, a dot on each point, a legend line.
  bool anything_drawn = false;
  std::vector<std::pair<double, double>> written_labels;  // where event labels were written, any series'
  const auto label_fits = [&written_labels](double px, double py) {
    // A label (about 60 px of 10-px text) 70 px beside or 14 px above or below another does not
    // overlap it.
    for (const auto& [lx, ly] : written_labels) {
      if (std::abs(px - lx) <= 70 && std::abs(py - ly) <= 14) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const chart_series& s = chart.series[i];
    std::string path, dots, labels;
    bool pen_down = false;
    for (std::size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k) {
      if (!drawable(s.x[k], chart.x_axis.scale) || !drawable(s.y[k], chart.y_axis.scale)) {
        pen_down = false;
        continue;
      }
      const double px = to_x(s.x[k]), py = to_y(s.y[k]);
      const std::string x = pixels(px), y = pixels(py);
      path += (pen_down ? " L" : (path.empty() ? "M" : " M")) + x + " " + y;
      const std::string label = k < s.labels.size() ? xml_escaped(s.labels[k]) : std::string();
      if (s.points_only) {
        dots += "<circle cx=\"" + x + "\" cy=\"" + y + "\" r=\"4.5\" fill-opacity=\"0.75\">" +
                (label.empty() ? std::string() : "<title>" + label + "</title>") + "</circle>";
        if (!label.empty() && label_fits(px, py)) {
          labels +=
              "<text x=\"" + pixels(px + 6) + "\" y=\"" + pixels(py - 6) + "\" font-size=\"10\">" + label + "</text>";
          written_labels.emplace_back(px, py);
        }
      } else {
        dots += "<circle cx=\"" + x + "\" cy=\"" + y + "\" r=\"2.5\"/>";
      }
      pen_down = true;
    }
    const std::string stroke = series_stroke(i);
    if (!path.empty()) {
      anything_drawn = true;
      if (!s.points_only) svg += "<path d=\"" + path + "\" fill=\"none\" stroke-width=\"1.8\" " + stroke + "/>\n";
      svg += "<g fill=\"" + series_colour(i) + "\">" + dots + "</g>\n";
      if (!labels.empty()) svg += "<g fill=\"" + series_colour(i) + "\">" + labels + "</g>\n";
    }
    const double legend_y = plot_top + 8 + 18.0 * static_cast<double>(i);
    if (s.points_only) {
      svg += "<circle cx=\"" + pixels(plot_right + 24) + "\" cy=\"" + pixels(legend_y) + "\" r=\"4.5\" fill=\"" +
             series_colour(i) + "\"/>\n";
    } else {
      svg += "<line x1=\"" + pixels(plot_right + 12) + "\" y1=\"" + pixels(legend_y) + "\" x2=\"" +
             pixels(plot_right + 36) + "\" y2=\"" + pixels(legend_y) + "\" stroke-width=\"2.5\" " + stroke + "/>\n";
    }
    svg += "<text x=\"" + pixels(plot_right + 42) + "\" y=\"" + pixels(legend_y + 4) + "\">" + xml_escaped(s.name) +
           "</text>\n";
  }
  if (!anything_drawn) {
    svg += "<text x=\"" + pixels((plot_left + plot_right) / 2) + "\" y=\"" + pixels((plot_top + plot_bottom) / 2) +
           "\" text-anchor=\"middle\" fill=\"#888888\">no drawable points</text>\n";
  }
  return svg;
}

}  // namespace detail

// A figure of panels laid out in rows of layout.columns, under an optional title.
inline std::string svg_figure(const std::string& title, const std::vector<line_chart>& panels,
                              const figure_layout& layout = {}) {
  const int columns = std::max(1, std::min(layout.columns, static_cast<int>(std::max<std::size_t>(panels.size(), 1))));
  const int rows = (static_cast<int>(panels.size()) + columns - 1) / columns;
  const int title_height = title.empty() ? 0 : 36;
  const int width = columns * layout.panel_width;
  const int height = title_height + std::max(rows, 1) * layout.panel_height;
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!title.empty()) {
    svg += "<text x=\"" + std::to_string(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">" +
           detail::xml_escaped(title) + "</text>\n";
  }
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const int column = static_cast<int>(i) % columns, row = static_cast<int>(i) / columns;
    svg += "<g transform=\"translate(" + std::to_string(column * layout.panel_width) + " " +
           std::to_string(title_height + row * layout.panel_height) + ")\">\n";
    svg += detail::svg_panel(panels[i], layout.panel_width, layout.panel_height);
    svg += "</g>\n";
  }
  return svg + "</svg>\n";
}

}  // namespace mixprec_example
