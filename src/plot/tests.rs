//! Format strings and colours as Matplotlib reads them, NumPy's histogram counts, and
//! a rendered PNG read back (size, background, an imshow pixel).

use super::model::{histogram, parse_color, parse_fmt, Artist, Figure, LineStyle, Marker};

#[test]
fn format_strings_follow_matplotlib() {
    assert_eq!(
        parse_fmt("r--").unwrap(),
        (Some((255, 0, 0)), None, Some(LineStyle::Dashed))
    );
    assert_eq!(
        parse_fmt("o").unwrap(),
        (None, Some(Marker::Circle), Some(LineStyle::None))
    );
    assert_eq!(
        parse_fmt("k.-").unwrap(),
        (Some((0, 0, 0)), Some(Marker::Point), Some(LineStyle::Solid))
    );
    assert!(parse_fmt("rr").is_err());
    assert!(parse_fmt("q").is_err());
    assert_eq!(parse_color("#1f77b4").unwrap(), (0x1f, 0x77, 0xb4));
    assert_eq!(parse_color("C1").unwrap(), (0xff, 0x7f, 0x0e));
    assert!(parse_color("#12").is_err());
}

#[test]
fn histogram_counts_as_numpy() {
    // numpy.histogram([1, 2, 2, 3], bins=4) -> [1, 0, 2, 1], edges 1 1.5 2 2.5 3
    let (e, c) = histogram(&[1.0, 2.0, 2.0, 3.0, f64::NAN], 4, None).unwrap();
    assert_eq!(c, vec![1.0, 0.0, 2.0, 1.0]);
    assert_eq!(e, vec![1.0, 1.5, 2.0, 2.5, 3.0]);
    assert!(histogram(&[1.0, f64::INFINITY], 4, None).is_err());
}

#[test]
fn a_png_has_the_figure_size_and_the_image_pixels() {
    let mut f = Figure::new(1, 1, (2.0, 2.0), 50.0).unwrap();
    f.axes[0].artists.push(Artist::Image {
        height: 1,
        width: 1,
        channels: 3,
        pixels: vec![1.0, 0.0, 0.0],
    });
    let png = crate::io::png::decode(&super::render::png(&f).unwrap()).unwrap();
    assert_eq!((png.width, png.height, png.channels), (100, 100, 3));
    assert_eq!(&png.pixels[..3], &[255, 255, 255]);
    // the plot area's centre: x 12+48 .. 100-12, y 12 .. 100-12-28
    let (x, y) = ((60 + 88) / 2, (12 + 60) / 2);
    let i = (y * 100 + x) * 3;
    assert_eq!(&png.pixels[i..i + 3], &[255, 0, 0]);
    let svg = super::render::svg(&f).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("width=\"100\""));
}
