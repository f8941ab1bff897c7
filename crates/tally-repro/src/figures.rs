//! Figures: a grid of line-plot panels (rows × columns) with a shared legend, axis labels,
//! error bars and an optional log-scale y axis, drawn as PNG and as SVG.
//!
//! Text is set in DejaVu Sans, embedded in the binary (the `dejavu` crate) and registered with
//! plotters' `ab_glyph` text renderer, so drawing needs no system fonts: figures render the
//! same on a bare CI machine.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::Error;

/// One point of a line: `y ± error` at `x`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// The abscissa.
    pub x: f64,
    /// The value.
    pub y: f64,
    /// The half-height of the error bar (for example a standard error); 0 draws none.
    pub error: f64,
}

/// One line of a panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The index of the line's series in [`GridPlot::series`]: its legend entry and colour.
    pub series: usize,
    /// The points, in drawing order.
    pub points: Vec<Point>,
    /// Whether each point gets a dot (for a sweep's few points), or only the line is drawn
    /// (for a dense curve).
    pub markers: bool,
}

/// One panel of the grid.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Panel {
    /// The caption above the panel.
    pub title: String,
    /// The lines drawn in the panel.
    pub lines: Vec<Line>,
}

/// The y axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum YAxis {
    /// A linear axis over `min..max`.
    Linear {
        /// The bottom of the axis.
        min: f64,
        /// The top of the axis.
        max: f64,
    },
    /// A log-scale axis fitted to each panel's positive values (points at or below zero are
    /// not drawn).
    Log,
}

/// A grid of panels sharing a legend and axis labels.
#[derive(Clone, Debug, PartialEq)]
pub struct GridPlot {
    /// The title above the grid.
    pub title: String,
    /// The legend: one name per series, in order; series `i` gets colour `i`. Where lines
    /// overlap, the earlier series is drawn on top.
    pub series: Vec<String>,
    /// The x-axis label of every panel.
    pub x_label: String,
    /// The y-axis label of every panel.
    pub y_label: String,
    /// The y axis of every panel.
    pub y_axis: YAxis,
    /// The panels, row by row; every row has the same number of panels.
    pub panels: Vec<Vec<Panel>>,
    /// Width and height of one panel in pixels ([`PANEL_SIZE`] for the papers' grids).
    pub panel_size: (u32, u32),
}

/// Series colours, in legend order.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(90, 90, 90),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// Width and height of one panel of the papers' grids, in pixels.
pub const PANEL_SIZE: (u32, u32) = (440, 300);
/// Height of the title and legend strip.
const HEADER_HEIGHT: u32 = 90;
const FONT: &str = "sans-serif";

/// The colour of series `i`.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The marker shapes, series `i` getting shape `i mod 4`, so that series stay apart where
/// colours do not (in print, for colour-blind readers).
#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

impl Marker {
    fn of(series: usize) -> Self {
        [Self::Circle, Self::Triangle, Self::Square, Self::Cross][series % 4]
    }
}

/// Draws series `series`'s marker of half-width `size` at each of `at` with `draw`, which
/// takes the elements of one shape.
macro_rules! draw_markers {
    ($series:expr, $at:expr, $size:expr, |$elements:ident| $draw:expr) => {{
        let style = colour($series).filled();
        let size: i32 = $size;
        match Marker::of($series) {
            Marker::Circle => {
                let $elements = $at.map(|at| Circle::new(at, size, style));
                $draw
            }
            Marker::Triangle => {
                let $elements = $at.map(|at| TriangleMarker::new(at, size + 1, style));
                $draw
            }
            Marker::Square => {
                let $elements = $at.map(|at| {
                    EmptyElement::at(at) + Rectangle::new([(-size, -size), (size, size)], style)
                });
                $draw
            }
            Marker::Cross => {
                let $elements = $at.map(|at| Cross::new(at, size, colour($series).stroke_width(2)));
                $draw
            }
        }
    }};
}

/// Registers the embedded font once.
fn register_fonts() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            for (style, bytes) in [
                (FontStyle::Normal, dejavu::sans::regular()),
                (FontStyle::Bold, dejavu::sans::bold()),
            ] {
                register_font(FONT, style, bytes).map_err(|_| "invalid embedded font")?;
            }
            Ok(())
        })
        .clone()
}

impl GridPlot {
    /// The image size in pixels.
    pub fn size(&self) -> (u32, u32) {
        let rows = self.panels.len() as u32;
        let columns = self.panels.iter().map(Vec::len).max().unwrap_or(0) as u32;
        (
            self.panel_size.0 * columns.max(1),
            HEADER_HEIGHT + self.panel_size.1 * rows.max(1),
        )
    }

    /// Writes `dir/stem.png` and `dir/stem.svg` and returns their paths.
    ///
    /// # Errors
    ///
    /// As [`write_png`](Self::write_png) and [`write_svg`](Self::write_svg).
    pub fn write_png_and_svg(&self, dir: &Path, stem: &str) -> Result<[PathBuf; 2], Error> {
        let png = dir.join(format!("{stem}.png"));
        self.write_png(&png)?;
        let svg = dir.join(format!("{stem}.svg"));
        self.write_svg(&svg)?;
        Ok([png, svg])
    }

    /// Draws the grid as a PNG file.
    ///
    /// # Errors
    ///
    /// [`Error::Figure`] if drawing or writing fails.
    pub fn write_png(&self, path: &Path) -> Result<(), Error> {
        let result = register_fonts().and_then(|()| {
            let root = BitMapBackend::new(path, self.size()).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| e.to_string())
        });
        result.map_err(|message| Error::Figure {
            path: path.to_owned(),
            message,
        })
    }

    /// Draws the grid as an SVG document, to be written inline into an HTML page.
    ///
    /// # Errors
    ///
    /// [`Error::Figure`] if drawing fails (`path` names the figure in the message).
    pub fn to_svg_string(&self, path: &Path) -> Result<String, Error> {
        let mut svg = String::new();
        let result = register_fonts().and_then(|()| {
            let root = SVGBackend::with_string(&mut svg, self.size()).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| e.to_string())
        });
        result.map_err(|message| Error::Figure {
            path: path.to_owned(),
            message,
        })?;
        Ok(svg)
    }

    /// Draws the grid as an SVG file.
    ///
    /// # Errors
    ///
    /// [`Error::Figure`] if drawing or writing fails.
    pub fn write_svg(&self, path: &Path) -> Result<(), Error> {
        let result = register_fonts().and_then(|()| {
            let root = SVGBackend::new(path, self.size()).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| e.to_string())
        });
        result.map_err(|message| Error::Figure {
            path: path.to_owned(),
            message,
        })
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (header, body) = root.split_vertically(HEADER_HEIGHT);
        self.draw_header(&header)?;
        let rows = self.panels.len();
        let columns = self.panels.iter().map(Vec::len).max().unwrap_or(0);
        if rows == 0 || columns == 0 {
            return Ok(());
        }
        let areas = body.split_evenly((rows, columns));
        for (r, row) in self.panels.iter().enumerate() {
            for (c, panel) in row.iter().enumerate() {
                self.draw_panel(&areas[r * columns + c], panel)?;
            }
        }
        Ok(())
    }

    fn draw_header<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        area.draw(&Text::new(
            self.title.clone(),
            (12, 10),
            (FONT, 24).into_font().style(FontStyle::Bold),
        ))
        .map_err(err)?;
        // Legend entries in one row, each a short coloured line with a dot and its name,
        // spread evenly but never closer than the names' widths allow; the font shrinks until
        // the row fits the width.
        let available = area.dim_in_pixel().0 as i32 - 24;
        let layout = |size: u32| {
            let font = TextStyle::from((FONT, size).into_font());
            let widths: Vec<i32> = self
                .series
                .iter()
                .map(|name| {
                    let width = area.estimate_text_size(name, &font).map_or(0, |(w, _)| w);
                    42 + width as i32 + 16
                })
                .collect();
            (font, widths)
        };
        let (font, mut widths) = [17, 15, 13, 11]
            .into_iter()
            .map(layout)
            .find(|(_, widths)| widths.iter().sum::<i32>() <= available)
            .unwrap_or_else(|| layout(11));
        // Share the room left over equally between the entries.
        let spare = (available - widths.iter().sum::<i32>()).max(0) / widths.len().max(1) as i32;
        for width in &mut widths {
            *width += spare;
        }
        let mut x = 12;
        for (i, name) in self.series.iter().enumerate() {
            let y = 62;
            let style = colour(i).stroke_width(3);
            area.draw(&PathElement::new(vec![(x, y), (x + 34, y)], style))
                .map_err(err)?;
            draw_markers!(i, std::iter::once((x + 17, y)), 4, |elements| {
                for element in elements {
                    area.draw(&element).map_err(err)?;
                }
            });
            area.draw(&Text::new(name.clone(), (x + 42, y - 9), font.clone()))
                .map_err(err)?;
            x += widths[i];
        }
        Ok(())
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &Panel,
    ) -> Result<(), String> {
        let points = || panel.lines.iter().flat_map(|l| l.points.iter());
        let (mut x_min, mut x_max) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |a, p| {
            (a.0.min(p.x), a.1.max(p.x))
        });
        if x_min > x_max {
            (x_min, x_max) = (0.0, 1.0);
        }
        let pad = ((x_max - x_min) * 0.05).max(1e-9);
        let x_range = (x_min - pad)..(x_max + pad);
        match self.y_axis {
            YAxis::Linear { min, max } => self.draw_chart(area, panel, x_range, min..max, None),
            YAxis::Log => {
                let positive = || points().filter(|p| p.y > 0.0);
                let lo = positive()
                    .map(|p| {
                        if p.y - p.error > 0.0 {
                            p.y - p.error
                        } else {
                            p.y
                        }
                    })
                    .fold(f64::INFINITY, f64::min);
                let hi = positive()
                    .map(|p| p.y + p.error)
                    .fold(f64::NEG_INFINITY, f64::max);
                let (lo, hi) = if lo <= hi {
                    log_range(lo / 1.5, hi * 1.5)
                } else {
                    (1e-6, 1.0)
                };
                self.draw_chart(area, panel, x_range, (lo..hi).log_scale(), Some(lo))
            }
        }
    }

    /// Draws one panel on a y axis `y`; `floor` is the bottom of a log axis, where error bars
    /// that reach zero or below are cut.
    fn draw_chart<DB, Y>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &Panel,
        x: std::ops::Range<f64>,
        y: Y,
        floor: Option<f64>,
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, (FONT, 17))
            .margin(8)
            .x_label_area_size(38)
            .y_label_area_size(62)
            .build_cartesian_2d(x, y)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_labels(6)
            .y_labels(6)
            .draw()
            .map_err(err)?;
        // The first series last, so that it is drawn on top where lines overlap; each of the
        // next three series wider, and its markers larger, so that lines that coincide still
        // show each series as a band of colour around the ones before it.
        for line in panel.lines.iter().rev() {
            let style = colour(line.series);
            let spread = u8::try_from(line.series.min(3)).unwrap_or(3);
            let visible: Vec<Point> = line
                .points
                .iter()
                .copied()
                .filter(|p| p.y.is_finite() && floor.is_none_or(|_| p.y > 0.0))
                .collect();
            chart
                .draw_series(LineSeries::new(
                    visible.iter().map(|p| (p.x, p.y)),
                    style.stroke_width(2 + 2 * u32::from(spread)),
                ))
                .map_err(err)?;
            if line.markers {
                let size = 3 + 2 * i32::from(spread);
                draw_markers!(
                    line.series,
                    visible.iter().map(|p| (p.x, p.y)),
                    size,
                    |elements| {
                        chart.draw_series(elements).map_err(err)?;
                    }
                );
            }
            chart
                .draw_series(visible.iter().filter(|p| p.error > 0.0).map(|p| {
                    let low = p.y - p.error;
                    let low = floor.map_or(low, |f| low.max(f));
                    ErrorBar::new_vertical(p.x, low, p.y, p.y + p.error, style.stroke_width(1), 6)
                }))
                .map_err(err)?;
        }
        Ok(())
    }
}

/// The range `lo..hi` of a log axis, widened to the powers of ten around it when it holds
/// none: a log axis is labelled at powers of ten, and one between two of them had no label.
fn log_range(lo: f64, hi: f64) -> (f64, f64) {
    let (below, above) = (lo.log10().floor(), hi.log10().ceil());
    if above - below <= 1.0 {
        (10f64.powf(below), 10f64.powf(above))
    } else {
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_axis_between_two_powers_of_ten_is_widened_to_them() {
        let close = |(lo, hi): (f64, f64), (a, b): (f64, f64)| {
            (lo - a).abs() <= 1e-12 * a && (hi - b).abs() <= 1e-12 * b
        };
        assert!(close(log_range(1.28, 8.6), (1.0, 10.0)));
        assert!(close(log_range(0.02, 0.05), (0.01, 0.1)));
        assert!(close(log_range(0.5, 200.0), (0.5, 200.0)));
        assert!(close(log_range(2.0, 30.0), (2.0, 30.0)));
    }

    fn plot(y_axis: YAxis) -> GridPlot {
        let line = |series, scale: f64| Line {
            series,
            points: (1..=10)
                .map(|i| Point {
                    x: f64::from(i) / 10.0,
                    y: scale / f64::from(i),
                    error: scale / 20.0,
                })
                .collect(),
            markers: true,
        };
        GridPlot {
            title: "test".into(),
            series: vec!["a".into(), "b".into()],
            x_label: "ε".into(),
            y_label: "error".into(),
            y_axis,
            panels: vec![vec![
                Panel {
                    title: "one".into(),
                    lines: vec![line(0, 1.0), line(1, 0.01)],
                },
                Panel {
                    title: "two".into(),
                    lines: vec![line(1, 0.5)],
                },
            ]],
            panel_size: PANEL_SIZE,
        }
    }

    #[test]
    fn draws_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("tally-repro-figures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let png = dir.join("a.png");
        let svg = dir.join("a.svg");
        plot(YAxis::Log).write_png(&png).expect("png");
        plot(YAxis::Linear { min: 0.0, max: 1.1 })
            .write_svg(&svg)
            .expect("svg");
        let bytes = std::fs::read(&png).expect("read png");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        let text = std::fs::read_to_string(&svg).expect("read svg");
        assert!(text.contains("<svg") && text.contains("</svg>"));
        let inline = plot(YAxis::Linear { min: 0.0, max: 1.1 })
            .to_svg_string(&svg)
            .expect("svg string");
        assert_eq!(inline, text);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
