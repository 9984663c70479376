"""SVG charts of benchmark results, written with the standard library only (no plotting
package on the machines the benchmarks run on): panels of horizontal bars, one panel a
measure, and step curves of a count over time. Every chart carries a caption (what ran,
on which machine, when), so that a picture is never shown without its conditions.

The output is plain text and deterministic: the same figures give the same bytes, so a
regenerated chart that did not change leaves git's work tree clean."""

import math
from xml.sax.saxutils import escape

# Colours told apart by colour-blind readers too (Okabe and Ito's palette), in the order
# series are given.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

WIDTH = 760
FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\""
LINE = 18          # height of a line of text
CHAR = 7.2         # mean width of a character at 12px, for laying out labels
LEGEND = 140       # width of a legend's text beside a chart


def colour(index):
    return PALETTE[index % len(PALETTE)]


def number(value):
    """A figure as a chart prints it: 1,295 and 59.4 and 0.76 (three significant digits at most
    below 1,000, thousands separated above)."""
    if value is None:
        return "–"
    if abs(value) >= 1000 or value == int(value):
        return f"{value:,.0f}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value))))) if value else 0
    return f"{value:,.{digits}f}"


def nice_ticks(top, count=5, whole=False):
    """Tick values from 0 covering top, on a step of 1, 2 or 5 times a power of ten (at least
    1 when whole: counts have no tick between two whole numbers)."""
    if top <= 0:
        return [0, 1]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if whole:
        step = max(step, 1)
    ticks = [0.0]
    while ticks[-1] < top:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def tick_label(value):
    """A tick as short as it can be written: 0.2, 1.5, 1,000."""
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def text(x, y, content, size=12, anchor="start", weight="normal", fill="#222"):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}">{escape(str(content))}</text>')


def wrap(content, width):
    """content cut into lines of at most width pixels at 12px (by words)."""
    lines, line = [], ""
    for word in content.split():
        if line and (len(line) + 1 + len(word)) * CHAR > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def document(height, title, body, caption):
    """The whole SVG: title on top, the body, the caption's lines at the bottom."""
    caption_lines = wrap(caption, WIDTH - 20)
    total = height + LINE * (len(caption_lines) + 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{total:.0f}" '
             f'viewBox="0 0 {WIDTH} {total:.0f}" {FONT}>',
             f"<title>{escape(title)}</title>",
             f'<rect width="{WIDTH}" height="{total:.0f}" fill="#fff"/>',
             text(10, 22, title, size=15, weight="bold"), *body]
    for i, line in enumerate(caption_lines):
        parts.append(text(10, height + LINE * (i + 1), line, size=11, fill="#555"))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def bar_panels(title, panels, caption):
    """Panels of horizontal bars, each on its own scale: panels is a list of
    (heading, unit, [(label, value or None)…]); a None value is drawn as "not measured".
    Bars of the same label have the same colour in every panel."""
    labels = []
    for _, _, bars in panels:
        labels += [label for label, _ in bars if label not in labels]
    label_width = max(CHAR * len(label) for label in labels) + 16
    left, right = 10 + label_width, WIDTH - 90
    body, y = [], 40
    for heading, unit, bars in panels:
        body.append(text(10, y + 12, heading, size=13, weight="bold"))
        y += LINE + 6
        top = max([value for _, value in bars if value is not None] or [1])
        for label, value in bars:
            body.append(text(left - 8, y + 13, label, anchor="end"))
            if value is None:
                body.append(text(left, y + 13, "not measured", fill="#888"))
            else:
                length = (right - left) * value / top if top else 0
                body.append(f'<rect x="{left}" y="{y + 2}" width="{max(length, 1):.1f}" height="14" '
                            f'fill="{colour(labels.index(label))}"/>')
                body.append(text(left + length + 6, y + 13, f"{number(value)} {unit}".rstrip()))
            y += LINE + 2
        y += 10
    return document(y, title, body, caption)


def step_curves(title, series, caption, x_label, y_label, references=()):
    """Step curves of a count over time: series is a list of (label, [(x, y)…]) with x
    increasing; each curve holds its value until its next point. references is a list of
    (label, [(x, y)…]) drawn as dashed straight segments (a limit to compare with)."""
    left, top_margin, plot_width, plot_height = 72, 44, WIDTH - 262, 300
    all_points = [p for _, points in list(series) + list(references) for p in points]
    x_ticks = nice_ticks(max([x for x, _ in all_points] or [1]))
    y_ticks = nice_ticks(max([y for _, y in all_points] or [1]), whole=True)
    x_max, y_max = x_ticks[-1], y_ticks[-1]

    def at(x, y):
        return left + plot_width * x / x_max, top_margin + plot_height * (1 - y / y_max)

    body = []
    for tick in x_ticks:
        x, _ = at(tick, 0)
        body.append(f'<line x1="{x:.1f}" y1="{top_margin}" x2="{x:.1f}" y2="{top_margin + plot_height}" '
                    f'stroke="#e4e4e4"/>')
        body.append(text(x, top_margin + plot_height + 16, tick_label(tick), size=11, anchor="middle"))
    for tick in y_ticks:
        _, y = at(0, tick)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_width}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        body.append(text(left - 6, y + 4, tick_label(tick), size=11, anchor="end"))
    body.append(f'<rect x="{left}" y="{top_margin}" width="{plot_width}" height="{plot_height}" '
                f'fill="none" stroke="#888"/>')
    body.append(text(left + plot_width / 2, top_margin + plot_height + 34, x_label, anchor="middle"))
    body.append(f'<text x="16" y="{top_margin + plot_height / 2:.1f}" font-size="12" text-anchor="middle" '
                f'transform="rotate(-90 16 {top_margin + plot_height / 2:.1f})" fill="#222">{escape(y_label)}</text>')
    legend_y = top_margin + 6
    for index, (label, points) in enumerate(series):
        path, last = [], None
        for x, y in points:
            px, py = at(x, y)
            if last is None:
                path.append(f"M{px:.1f},{py:.1f}")
            else:
                path.append(f"H{px:.1f}V{py:.1f}")
            last = (px, py)
        body.append(f'<path d="{" ".join(path)}" fill="none" stroke="{colour(index)}" stroke-width="2"/>')
        body += legend(left + plot_width + 14, legend_y, label, colour(index))
        legend_y += LINE * len(wrap(label, LEGEND)) + 4
    for index, (label, points) in enumerate(references):
        path = " ".join(("M" if i == 0 else "L") + "%.1f,%.1f" % at(x, y) for i, (x, y) in enumerate(points))
        tint = colour(len(series) + index)
        body.append(f'<path d="{path}" fill="none" stroke="{tint}" stroke-width="1.5" stroke-dasharray="6 4"/>')
        body += legend(left + plot_width + 14, legend_y, label, tint, dashed=True)
        legend_y += LINE * len(wrap(label, LEGEND)) + 4
    return document(top_margin + plot_height + 48, title, body, caption)


def legend(x, y, label, tint, dashed=False):
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    parts = [f'<line x1="{x}" y1="{y + 4}" x2="{x + 22}" y2="{y + 4}" stroke="{tint}" stroke-width="2"{dash}/>']
    for i, line in enumerate(wrap(label, LEGEND)):
        parts.append(text(x + 28, y + 8 + LINE * i, line, size=11))
    return parts
