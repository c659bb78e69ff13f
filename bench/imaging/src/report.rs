//! Markdown output.

/// Prints a Markdown table; the first column is left-aligned, the others right-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    println!("| {} |", header.join(" | "));
    let align: Vec<&str> = (0..header.len()).map(|i| if i == 0 { "---" } else { "---:" }).collect();
    println!("|{}|", align.join("|"));
    for row in rows {
        println!("| {} |", row.join(" | "));
    }
    println!();
}

/// Prints one "missed" line per target missed, or says that all were met.
pub fn missed(what: &str, lines: &[String]) {
    if lines.is_empty() {
        println!("All {what} targets met.\n");
    } else {
        for line in lines {
            println!("- missed: {line}");
        }
        println!();
    }
}

pub fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1} ms")
    } else {
        "n/a".into()
    }
}

pub fn per_s(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}/s")
    } else {
        "n/a".into()
    }
}

pub fn ratio(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "n/a".into()
    }
}

pub fn kib(bytes: f64) -> String {
    if bytes.is_finite() {
        format!("{:.0} KiB", bytes / 1024.0)
    } else {
        "n/a".into()
    }
}

pub fn yes_no(met: bool) -> String {
    if met { "yes" } else { "**no**" }.into()
}
