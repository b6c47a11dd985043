//! SVG charts drawn on the server (decisions §17): a line chart of monthly series with dashed
//! forecast segments and their interval bands, an interval across zero, a heat map, and
//! sparklines. Plain SVG with
//! class names (the stylesheet colours them, also in dark mode) and presentation attributes
//! only, since the CSP allows no inline style. Every chart has a `<title>`; the numbers are
//! shown as a table beside it by the page.

use std::fmt::Write;

use super::layout::{escape, money, trim_number};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 36.0;

/// What a monthly chart's values are, for its axis labels.
#[derive(Clone, Copy)]
pub enum Unit<'a> {
    /// Cents of this currency.
    Money(&'a str),
    /// Hundredths of a percent.
    Percent,
    Count,
}

impl Unit<'_> {
    /// A value as shown on the axis and in the table beside the chart.
    pub fn label(self, v: i64) -> String {
        match self {
            Unit::Money(currency) => money(v, currency),
            Unit::Percent => format!("{}%", trim_number(v as f64 / 100.0)),
            Unit::Count => v.to_string(),
        }
    }
}

/// One series: its class (`churned`, `recovered`), known values, then forecast values with
/// their bounds.
pub struct Series<'a> {
    pub class: &'a str,
    pub history: Vec<i64>,
    pub forecast: Vec<(i64, i64, i64)>,
}

/// Monthly series over `labels` (history months, then forecast months).
pub fn monthly(title: &str, unit: Unit, labels: &[String], series: &[Series]) -> String {
    let n = labels.len();
    let max = series
        .iter()
        .flat_map(|s| {
            s.history
                .iter()
                .copied()
                .chain(s.forecast.iter().map(|f| f.0.max(f.2)))
        })
        .max()
        .unwrap_or(0)
        // At least $4.00, so that an empty chart's axis reads $0, $1 … not four $0.00s.
        .max(400);
    let top = nice_ceiling(max);
    let x = |i: usize| plot_x(i, n);
    let y = |v: i64| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - v.max(0) as f64 / top as f64);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="chart-title"><title id="chart-title">{}</title>"#,
        escape(title)
    );
    for step in 0..=4 {
        let value = top * step / 4;
        let yy = y(value);
        let _ = write!(
            svg,
            r#"<line class="axis" x1="{LEFT}" x2="{}" y1="{yy:.1}" y2="{yy:.1}"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            LEFT - 6.0,
            yy + 4.0,
            escape(&unit.label(value))
        );
    }
    // At most about eight month labels, always the first and the last.
    x_labels(&mut svg, labels.iter().map(String::as_str), 8);
    for s in series {
        let h = s.history.len();
        if !s.forecast.is_empty() {
            // The band: upper bounds left to right, lower bounds back, from the last known point.
            let mut points = Vec::new();
            if h > 0 {
                points.push((x(h - 1), y(s.history[h - 1])));
            }
            for (i, f) in s.forecast.iter().enumerate() {
                points.push((x(h + i), y(f.2)));
            }
            for (i, f) in s.forecast.iter().enumerate().rev() {
                points.push((x(h + i), y(f.1)));
            }
            let _ = write!(
                svg,
                r#"<polygon class="band-{}" points="{}"/>"#,
                s.class,
                join(&points)
            );
            let mut line = Vec::new();
            if h > 0 {
                line.push((x(h - 1), y(s.history[h - 1])));
            }
            line.extend(
                s.forecast
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (x(h + i), y(f.0))),
            );
            let _ = write!(
                svg,
                r#"<polyline class="{} forecast" points="{}"/>"#,
                s.class,
                join(&line)
            );
        }
        let points: Vec<_> = s
            .history
            .iter()
            .enumerate()
            .map(|(i, v)| (x(i), y(*v)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="{}" points="{}"/>"#,
            s.class,
            join(&points)
        );
        // Known months as dots, so a single month still shows.
        for (px, py) in &points {
            let _ = write!(
                svg,
                r#"<circle class="{}" cx="{px:.1}" cy="{py:.1}" r="3"/>"#,
                s.class
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// An interval `[low, high]` with its point estimate, in percentage points, on an axis that
/// always shows zero. `id` makes its title's id unique on the page.
pub fn interval(id: &str, title: &str, point: f64, low: f64, high: f64) -> String {
    let (w, h) = (480.0, 56.0);
    let reach = low.abs().max(high.abs()).max(point.abs()).max(1.0) * 1.1;
    let x = |v: f64| 16.0 + (w - 32.0) * (v + reach) / (2.0 * reach);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{id}-title"><title id="{id}-title">{}</title>"#,
        escape(title)
    );
    let _ = write!(
        svg,
        r#"<line class="zero" x1="{0:.1}" x2="{0:.1}" y1="4" y2="36"/><text x="{0:.1}" y="50" text-anchor="middle">0</text>"#,
        x(0.0)
    );
    let _ = write!(
        svg,
        r#"<line class="interval" x1="{:.1}" x2="{:.1}" y1="20" y2="20"/><circle class="point" cx="{:.1}" cy="20" r="5"/>"#,
        x(low),
        x(high),
        x(point)
    );
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="50" text-anchor="middle">{low:.1}</text><text x="{:.1}" y="50" text-anchor="middle">{high:.1}</text></svg>"#,
        x(low),
        x(high)
    );
    svg
}

/// Daily scores (0–100) over `points` (date, score; no score where data was insufficient):
/// the line breaks at a missing day, and a lone day shows as a dot. Bands mark the risk levels'
/// thresholds (40, 60, 80).
pub fn scores(title: &str, points: &[(String, Option<i64>)]) -> String {
    let n = points.len();
    let x = |i: usize| plot_x(i, n);
    let y = |v: i64| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - v.clamp(0, 100) as f64 / 100.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="scores-title"><title id="scores-title">{}</title>"#,
        escape(title)
    );
    for value in [0, 20, 40, 60, 80, 100] {
        let yy = y(value);
        let class = if [40, 60, 80].contains(&value) {
            "axis level"
        } else {
            "axis"
        };
        let _ = write!(
            svg,
            r#"<line class="{class}" x1="{LEFT}" x2="{}" y1="{yy:.1}" y2="{yy:.1}"/><text x="{}" y="{:.1}" text-anchor="end">{value}</text>"#,
            WIDTH - RIGHT,
            LEFT - 6.0,
            yy + 4.0,
        );
    }
    x_labels(&mut svg, points.iter().map(|(label, _)| label.as_str()), 4);
    // Runs of consecutive scored days, each one polyline.
    let mut run: Vec<(f64, f64)> = Vec::new();
    let flush = |run: &mut Vec<(f64, f64)>, svg: &mut String| {
        match run.len() {
            0 => {}
            1 => {
                let _ = write!(
                    svg,
                    r#"<circle class="score" cx="{:.1}" cy="{:.1}" r="3"/>"#,
                    run[0].0, run[0].1
                );
            }
            _ => {
                let _ = write!(svg, r#"<polyline class="score" points="{}"/>"#, join(run));
            }
        }
        run.clear();
    };
    for (i, (_, score)) in points.iter().enumerate() {
        match score {
            Some(v) => run.push((x(i), y(*v))),
            None => flush(&mut run, &mut svg),
        }
    }
    flush(&mut run, &mut svg);
    svg.push_str("</svg>");
    svg
}

/// Signed contributions as horizontal bars from a centre line: positive (raising) to the
/// right, negative (lowering) to the left, each labelled with its name and signed value.
pub fn signed_bars(title: &str, bars: &[(String, i64)]) -> String {
    let (w, row, label_w) = (720.0, 28.0, 220.0);
    let h = row * bars.len().max(1) as f64 + 8.0;
    let reach = bars
        .iter()
        .map(|(_, v)| v.unsigned_abs())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let centre = label_w + (w - label_w) / 2.0;
    let half = (w - label_w) / 2.0 - 48.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart bars" viewBox="0 0 {w} {h}" role="img" aria-labelledby="signals-title"><title id="signals-title">{}</title>"#,
        escape(title)
    );
    let _ = write!(
        svg,
        r#"<line class="zero" x1="{centre:.1}" x2="{centre:.1}" y1="0" y2="{h:.1}"/>"#
    );
    for (i, (name, value)) in bars.iter().enumerate() {
        let top = 4.0 + row * i as f64;
        let len = half * value.unsigned_abs() as f64 / reach;
        let (class, x, text_x, anchor, sign) = if *value >= 0 {
            ("raises", centre, centre + len + 6.0, "start", "+")
        } else {
            ("lowers", centre - len, centre - len - 6.0, "end", "−")
        };
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect class="{class}" x="{x:.1}" y="{:.1}" width="{len:.1}" height="{:.1}"/><text x="{text_x:.1}" y="{:.1}" text-anchor="{anchor}">{sign}{}</text>"#,
            label_w - 8.0,
            top + 16.0,
            escape(name),
            top + 4.0,
            row - 10.0,
            top + 16.0,
            value.unsigned_abs()
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A funnel: one horizontal bar per step, its length the step's share of the first, labelled
/// with its name and count. `id` keeps the title's id unique on the page.
pub fn funnel(id: &str, title: &str, steps: &[(String, u64)]) -> String {
    let (w, row, label_w) = (720.0, 28.0, 160.0);
    let h = row * steps.len().max(1) as f64 + 8.0;
    let whole = steps.first().map_or(0, |(_, n)| *n).max(1) as f64;
    let reach = w - label_w - 64.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart funnel" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{id}-title"><title id="{id}-title">{}</title>"#,
        escape(title)
    );
    for (i, (name, n)) in steps.iter().enumerate() {
        let top = 4.0 + row * i as f64;
        let len = reach * (*n as f64 / whole).min(1.0);
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect class="step" x="{label_w:.1}" y="{:.1}" width="{len:.1}" height="{:.1}"/><text x="{:.1}" y="{:.1}">{n}</text>"#,
            label_w - 8.0,
            top + 16.0,
            escape(name),
            top + 4.0,
            row - 10.0,
            label_w + len + 6.0,
            top + 16.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One cell of a heat map: its shade (0–1), the number written in it, and its tooltip.
pub struct Cell {
    pub shade: f64,
    pub text: String,
    pub title: String,
}

/// Rows × columns of cells, each shaded by its value in five steps (classes `heat-0` to
/// `heat-4`, so the stylesheet picks colours that keep the number readable) and labelled with
/// its number; a `<title>` per cell says what it is.
pub fn heatmap(title: &str, rows: &[String], columns: &[String], cells: &[Vec<Cell>]) -> String {
    let (label_w, head_h, cell_w, cell_h) = (72.0, 28.0, 64.0, 28.0);
    let w = label_w + cell_w * columns.len().max(1) as f64;
    let h = head_h + cell_h * rows.len().max(1) as f64;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart heatmap" viewBox="0 0 {w} {h}" role="img" aria-labelledby="heatmap-title"><title id="heatmap-title">{}</title>"#,
        escape(title)
    );
    for (j, column) in columns.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            label_w + cell_w * (j as f64 + 0.5),
            head_h - 10.0,
            escape(column)
        );
    }
    for (i, (row, cells)) in rows.iter().zip(cells).enumerate() {
        let top = head_h + cell_h * i as f64;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            label_w - 8.0,
            top + cell_h / 2.0 + 4.0,
            escape(row)
        );
        for (j, cell) in cells.iter().enumerate() {
            let step = (cell.shade.clamp(0.0, 1.0) * 4.0).round() as u8;
            let left = label_w + cell_w * j as f64;
            let _ = write!(
                svg,
                r#"<g class="heat-{step}"><title>{}</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text></g>"#,
                escape(&cell.title),
                left + 1.0,
                top + 1.0,
                cell_w - 2.0,
                cell_h - 2.0,
                left + cell_w / 2.0,
                top + cell_h / 2.0 + 4.0,
                escape(&cell.text)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A small line of `values` (oldest first) scaled to its own range, for a tile: no axes, the
/// title says what it is and the tile holds the number.
pub fn sparkline(title: &str, values: &[f64]) -> String {
    let (w, h, pad) = (120.0, 32.0, 3.0);
    let (low, high) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    let span = if high > low { high - low } else { 1.0 };
    let n = values.len();
    let x = |i: usize| {
        if n <= 1 {
            w / 2.0
        } else {
            pad + (w - 2.0 * pad) * i as f64 / (n - 1) as f64
        }
    };
    // A flat series sits in the middle rather than on the floor.
    let y = |v: f64| {
        if high > low {
            h - pad - (h - 2.0 * pad) * (v - low) / span
        } else {
            h / 2.0
        }
    };
    let points: Vec<_> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (x(i), y(*v)))
        .collect();
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="spark" viewBox="0 0 {w} {h}" role="img" aria-label="{0}"><title>{0}</title>"#,
        escape(title)
    );
    if let Some((lx, ly)) = points.last() {
        let _ = write!(
            svg,
            r#"<polyline points="{}"/><circle cx="{lx:.1}" cy="{ly:.1}" r="2.5"/>"#,
            join(&points)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The x of the `i`th of `n` points spread across the plot; a lone point in its middle.
fn plot_x(i: usize, n: usize) -> f64 {
    if n <= 1 {
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0
    } else {
        LEFT + (WIDTH - LEFT - RIGHT) * i as f64 / (n - 1) as f64
    }
}

/// The labels under the points of the plot, at most about `most` of them: every so many,
/// always the first and the last.
fn x_labels<'a>(svg: &mut String, labels: impl ExactSizeIterator<Item = &'a str>, most: usize) {
    let n = labels.len();
    let every = n.div_ceil(most).max(1);
    for (i, label) in labels.enumerate() {
        if i.is_multiple_of(every) || i + 1 == n {
            // The end labels align inwards, so they are not cut off at the edges.
            let anchor = match i {
                _ if n == 1 => "middle",
                0 => "start",
                i if i + 1 == n => "end",
                _ => "middle",
            };
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{}" text-anchor="{anchor}">{}</text>"#,
                plot_x(i, n),
                HEIGHT - 12.0,
                escape(label)
            );
        }
    }
}

/// The smallest 1, 2 or 5 × 10ⁿ at or above `v`, so axis steps are round numbers.
fn nice_ceiling(v: i64) -> i64 {
    let mut magnitude = 1i64;
    while magnitude.saturating_mul(10) <= v {
        magnitude *= 10;
    }
    for factor in [1, 2, 4, 5, 10] {
        let candidate = magnitude.saturating_mul(factor);
        if candidate >= v {
            return candidate;
        }
    }
    v
}

fn join(points: &[(f64, f64)]) -> String {
    points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn months(n: usize) -> Vec<String> {
        (1..=n).map(|m| format!("2026-{m:02}")).collect()
    }

    #[test]
    fn a_monthly_chart_draws_history_forecast_and_band() {
        let svg = monthly(
            "Churned <and> recovered",
            Unit::Money("usd"),
            &months(5),
            &[Series {
                class: "churned",
                history: vec![10_000, 20_000, 15_000],
                forecast: vec![(16_000, 12_000, 20_000), (17_000, 11_000, 23_000)],
            }],
        );
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains("<title id=\"chart-title\">Churned &lt;and&gt; recovered</title>"),
            "{svg}"
        );
        assert_eq!(svg.matches("<polyline class=\"churned\"").count(), 1);
        assert_eq!(svg.matches("class=\"churned forecast\"").count(), 1);
        assert_eq!(svg.matches("<polygon class=\"band-churned\"").count(), 1);
        // The band holds the last known point, two upper bounds and two lower bounds.
        let band = svg.split("band-churned\" points=\"").nth(1).unwrap();
        let band = band.split('"').next().unwrap();
        assert_eq!(band.split(' ').count(), 5);
        // The axis tops out at a round number above the largest bound ($230.00), in four
        // round steps.
        assert!(
            svg.contains(">$400.00</text>") && svg.contains(">$100.00</text>"),
            "{svg}"
        );
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn an_empty_chart_is_still_valid() {
        let svg = monthly("Nothing yet", Unit::Count, &[], &[]);
        assert!(svg.ends_with("</svg>"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn values_map_to_the_plot_area() {
        let svg = monthly(
            "t",
            Unit::Money("usd"),
            &months(2),
            &[Series {
                class: "recovered",
                history: vec![0, 1_000],
                forecast: vec![],
            }],
        );
        // 0 sits on the baseline, the maximum on the top line, first and last month at the edges.
        let bottom = HEIGHT - BOTTOM;
        assert!(
            svg.contains(&format!(
                "points=\"{LEFT:.1},{bottom:.1} {:.1},{TOP:.1}\"",
                WIDTH - RIGHT
            )),
            "{svg}"
        );
    }

    #[test]
    fn scores_break_at_missing_days() {
        let day = |d: u32, s: Option<i64>| (format!("2026-11-{d:02}"), s);
        let svg = scores(
            "Risk",
            &[
                day(1, Some(10)),
                day(2, Some(20)),
                day(3, None),
                day(4, Some(90)),
            ],
        );
        assert_eq!(svg.matches("<polyline class=\"score\"").count(), 1);
        assert_eq!(svg.matches("<circle class=\"score\"").count(), 1);
        assert!(!svg.contains("NaN"));
        assert!(scores("Nothing", &[]).ends_with("</svg>"));
    }

    #[test]
    fn signed_bars_go_both_ways() {
        let svg = signed_bars(
            "Signals",
            &[("login_drop".into(), 30), ("nps_high".into(), -15)],
        );
        assert!(svg.contains("class=\"raises\"") && svg.contains("class=\"lowers\""));
        assert!(svg.contains(">+30</text>") && svg.contains(">−15</text>"));
    }

    #[test]
    fn round_axis_tops() {
        assert_eq!(nice_ceiling(1), 1);
        assert_eq!(nice_ceiling(7), 10);
        assert_eq!(nice_ceiling(130), 200);
        assert_eq!(nice_ceiling(350), 400);
        assert_eq!(nice_ceiling(450), 500);
    }

    #[test]
    fn the_interval_shows_zero() {
        let svg = interval("u30", "Uplift", 4.0, -2.0, 10.0);
        assert!(svg.contains("class=\"zero\""));
        assert!(svg.contains("<title id=\"u30-title\">Uplift</title>"));
        assert!(svg.contains(">-2.0</text>") && svg.contains(">10.0</text>"));
    }

    #[test]
    fn axis_labels_say_the_unit() {
        let series = [Series {
            class: "recovered",
            history: vec![2_500, 5_000],
            forecast: vec![],
        }];
        let rate = monthly("Rate", Unit::Percent, &months(2), &series);
        assert!(
            rate.contains(">50%</text>") && rate.contains(">0%</text>"),
            "{rate}"
        );
        let count = monthly("Open", Unit::Count, &months(2), &series);
        assert!(count.contains(">5000</text>"), "{count}");
    }

    #[test]
    fn a_heatmap_shades_and_labels_every_cell() {
        let cell = |shade: f64, text: &str| Cell {
            shade,
            text: text.into(),
            title: format!("<{text}>"),
        };
        let svg = heatmap(
            "Cohorts",
            &["2026-10".into(), "2026-11".into()],
            &["recovered".into(), "lost".into()],
            &[
                vec![cell(0.0, "0%"), cell(1.0, "100%")],
                vec![cell(0.5, "50%"), cell(0.12, "12%")],
            ],
        );
        assert_eq!(svg.matches("<rect").count(), 4);
        for (class, n) in [("heat-0", 2), ("heat-2", 1), ("heat-4", 1)] {
            assert_eq!(
                svg.matches(&format!("class=\"{class}\"")).count(),
                n,
                "{class}"
            );
        }
        assert!(svg.contains("<title>&lt;100%&gt;</title>") && svg.contains(">100%</text>"));
        assert!(svg.contains(">2026-11</text>") && svg.contains(">lost</text>"));
        assert!(heatmap("Nothing", &[], &[], &[]).ends_with("</svg>"));
    }

    #[test]
    fn a_sparkline_spans_its_own_range() {
        let svg = sparkline("Recovered <MRR>", &[1.0, 3.0, 2.0]);
        assert!(svg.contains("aria-label=\"Recovered &lt;MRR&gt;\""));
        // The lowest value on the floor, the highest on the ceiling, the last one dotted.
        assert!(
            svg.contains("points=\"3.0,29.0 60.0,3.0 117.0,16.0\""),
            "{svg}"
        );
        assert!(svg.contains("<circle cx=\"117.0\" cy=\"16.0\""));
        let flat = sparkline("Flat", &[0.0, 0.0]);
        assert!(
            flat.contains("3.0,16.0 117.0,16.0") && !flat.contains("NaN"),
            "{flat}"
        );
        assert!(!sparkline("Empty", &[]).contains("polyline"));
    }
}
