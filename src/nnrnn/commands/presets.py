"""``nnrnn presets [NAME]``: the presets' options per task and model, as tables."""
from __future__ import annotations

import textwrap

from .. import presets
from ..errors import UserError


def add_arguments(p) -> None:
    p.description = "The presets' options per task and model (nnrnn/presets/*.json); floats to 4 significant digits."
    p.add_argument("name", nargs="?", help="one preset (default: all of them)")
    p.add_argument("--task", help="only this task's tables (ptb: both truncation lengths)")
    p.add_argument("--model", help="only this model's rows")


def main(args) -> int:
    names = [args.name] if args.name else presets.preset_names()
    shown = [format_preset(name, args.task, args.model) for name in names]
    if not any(shown):
        raise UserError(f"no preset has settings for {' and '.join(filter(None, (args.task, args.model)))}; "
                        f"`nnrnn presets` lists them all")
    print("\n\n".join("\n".join(lines) for lines in shown if lines))
    return 0


def format_value(value) -> str:
    """A preset's or a run's value in a table: floats to 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return " ".join(map(format_value, value))
    return str(value)


def format_table(header: list[str], rows: list[list[str]], indent: str = "", width: int | None = None) -> list[str]:
    """Aligned columns; a table wider than ``width`` (when given) is cut into several, each repeating the first
    column."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    groups, current = [], []
    for column in range(1, len(header)):
        used = len(indent) + widths[0] + sum(widths[c] + 2 for c in current) + widths[column] + 2
        if current and width is not None and used > width:
            groups.append(current)
            current = []
        current.append(column)
    groups.append(current)
    lines = []
    for number, group in enumerate(groups):
        picked = [0, *group]
        lines += [""] * (number > 0) + [
            indent + "  ".join(row[c].ljust(widths[c]) for c in picked).rstrip() for row in (header, *rows)]
    return lines


def format_preset(name: str, task: str | None, model: str | None) -> list[str]:
    """Preset ``name``'s tables (those of ``task``, rows of ``model`` when given): per task, the options every
    model shares on one line, then a row per model of the options that differ; [] when none is left."""
    preset = presets.load(name)
    lines = []
    for table, models in preset.items():
        if table.startswith("_") or (task and table.split("-")[0] != task):
            continue
        variants = {label: options for label, options in preset.get("_variants", {}).get(table, {}).items()}
        rows = {m: o for m, o in models.items() if not model or m == model}
        rows.update({f"{label}*": o for label, o in variants.items() if not model or o["model"] == model})
        if not rows:
            continue
        shared = {k: v for k, v in next(iter(models.values())).items()
                  if all(k in o and o[k] == v for o in (*models.values(), *variants.values()))}
        keys = list(dict.fromkeys(k for o in rows.values() for k in o if k not in shared and k != "model"))
        lines += ["", *textwrap.wrap(f"{table}, every model: " + " ".join(f"{k}={format_value(v)}" for k, v in
                                                                         shared.items()),
                                     width=110, initial_indent="  ", subsequent_indent="    ")]
        cells = [[label, *(format_value(o[k]) if k in o else "-" for k in keys)] for label, o in rows.items()]
        lines += format_table(["model", *keys], cells, indent="    ", width=120)
        notes = ["-: not set, so nnrnn train's default"] if any("-" in row for row in cells) else []
        notes += [f"*: a variant, not a model: --model {o['model']} with the options of its row"
                  for label, o in rows.items() if label.endswith("*")][:1]
        lines += [f"    ({'; '.join(notes)})"] if notes else []
    header = textwrap.wrap(f"{name}: {preset.get('_description', '')}", width=110, subsequent_indent="  ")
    return header + lines if lines else []


