//! Charts drawn by the server as inline SVG: no script, no outside asset, allowed by the
//! console's Content-Security-Policy. Each chart has a text title and description for screen
//! readers, and its figures follow in a table.

use crate::pages::escape;

const WIDTH: i64 = 560;
const HEIGHT: i64 = 180;
const AXIS: i64 = 20;

/// A bar chart of `points` (label, value) with its caption; `show` writes a value for people.
pub fn bars(id: &str, caption: &str, points: &[(String, i64)], show: fn(i64) -> String) -> String {
    let max = points.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    let n = i64::try_from(points.len()).unwrap_or(1).max(1);
    let slot = WIDTH / n;
    let bar = (slot * 7 / 10).max(2);
    let plot = HEIGHT - AXIS;
    let mut shapes = String::new();
    for (i, (label, value)) in points.iter().enumerate() {
        let i = i64::try_from(i).unwrap_or(0);
        let h = (value.max(&0) * plot) / max;
        let x = i * slot + (slot - bar) / 2;
        let y = plot - h;
        shapes.push_str(&format!(
            "<rect x=\"{x}\" y=\"{y}\" width=\"{bar}\" height=\"{h}\" fill=\"#0969da\"><title>{}: {}</title></rect>",
            escape(label),
            escape(&show(*value))
        ));
    }
    // The first and last day under the axis.
    let first = points.first().map(|(l, _)| escape(l)).unwrap_or_default();
    let last = points.last().map(|(l, _)| escape(l)).unwrap_or_default();
    let total: i64 = points.iter().map(|(_, v)| *v).sum();
    let peak = show(points.iter().map(|(_, v)| *v).max().unwrap_or(0));
    let rows: String = points
        .iter()
        .map(|(label, value)| {
            format!(
                "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
                escape(label),
                escape(&show(*value))
            )
        })
        .collect();
    format!(
        "<figure id=\"{id}\"><figcaption id=\"{id}-caption\">{caption}</figcaption>\
         <svg viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" xmlns=\"http://www.w3.org/2000/svg\">\
         <title id=\"{id}-title\">{caption}</title><desc id=\"{id}-desc\">From {first} to {last}: highest {peak}.</desc>\
         <line x1=\"0\" y1=\"{plot}\" x2=\"{WIDTH}\" y2=\"{plot}\" stroke=\"#57606a\"/>{shapes}\
         <text x=\"0\" y=\"{HEIGHT}\" font-size=\"12\" fill=\"#57606a\">{first}</text>\
         <text x=\"{WIDTH}\" y=\"{HEIGHT}\" font-size=\"12\" fill=\"#57606a\" text-anchor=\"end\">{last}</text></svg>\
         <details><summary>The figures ({n} days{total_note})</summary><div class=\"scroll\"><table><thead><tr><th scope=\"col\">Day</th><th scope=\"col\">{caption}</th></tr></thead><tbody>{rows}</tbody></table></div></details></figure>",
        caption = escape(caption),
        total_note = if total > 0 { "" } else { ", all zero" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_has_a_bar_per_point_a_title_and_its_figures() {
        let points = vec![("2026-11-20".to_owned(), 2), ("2026-11-21".to_owned(), 5)];
        let svg = bars("sales", "Sales <per day>", &points, |v| v.to_string());
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("Sales &lt;per day&gt;"));
        assert!(svg.contains("<td>5</td>"));
        assert!(
            svg.contains("height=\"160\""),
            "the highest bar fills the plot: {svg}"
        );
    }
}
