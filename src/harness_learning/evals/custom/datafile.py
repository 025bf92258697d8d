"""Read a user's labelled examples: JSONL, JSON (a list of objects), CSV, or a directory saved
with Hugging Face `datasets` (`save_to_disk`). Each example needs a `question` (non-empty
text), a gold `answer` or a non-empty `answers` list, and may have an `id`; every other field is
a public input the harness sees. A bad example is one error naming the file, line and why."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

DATA_SUFFIXES = (".jsonl", ".json", ".csv")
GOLD_FIELDS = ("answer", "answers")
PRIVATE_FIELDS = ("id", *GOLD_FIELDS)


class DataFileError(ValueError):
    """A data file that cannot be used: `path:line: why`."""


def is_data_path(text: str) -> bool:
    """A file with a data suffix, or a saved `datasets` directory (it holds a state file)."""
    path = Path(text)
    if path.suffix.lower() in DATA_SUFFIXES:
        return True
    return path.is_dir() and any((path / f).is_file() for f in ("dataset_dict.json",
                                                                 "state.json"))


def load_examples(path: str | Path) -> list[dict[str, Any]]:
    """Every example of `path`, checked, with `id` filled in (the line number) where absent."""
    path = Path(path)
    if not path.exists():
        raise DataFileError(f"{path}: no such file or directory")
    rows = list(_read(path))
    if not rows:
        raise DataFileError(f"{path}: holds no examples")
    examples, seen = [], {}
    for line, row in rows:
        example = check_example(row, f"{path}:{line}")
        example["id"] = str(example.get("id", f"line{line}"))
        if example["id"] in seen:
            raise DataFileError(f"{path}:{line}: id {example['id']!r} repeats line "
                                f"{seen[example['id']]}; ids must be unique")
        seen[example["id"]] = line
        examples.append(example)
    return examples


def check_example(row: object, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise DataFileError(f"{where}: an example must be an object with `question` and "
                            f"`answer`, got {type(row).__name__}")
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataFileError(f"{where}: no `question` text (fields: {', '.join(sorted(row))})")
    if "answers" in row:
        answers = row["answers"]
        if not isinstance(answers, list) or not answers:
            raise DataFileError(f"{where}: `answers` must be a non-empty list")
    elif row.get("answer") is None or row.get("answer") == "":
        raise DataFileError(f"{where}: no gold `answer` (or `answers` list)")
    if "id" in row and not isinstance(row["id"], str | int):
        raise DataFileError(f"{where}: `id` must be a string or an integer")
    return dict(row)


def _read(path: Path) -> list[tuple[int, Any]]:
    if path.is_dir():
        return _read_datasets(path)
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        rows = []
        for number, raw in enumerate(text.splitlines(), 1):
            if raw.strip():
                try:
                    rows.append((number, json.loads(raw)))
                except ValueError as exc:
                    raise DataFileError(f"{path}:{number}: not JSON ({exc})") from None
        return rows
    if suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DataFileError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(data, list):
            raise DataFileError(f"{path}:1: a JSON data file must hold a list of examples")
        return [(i, row) for i, row in enumerate(data, 1)]  # "line" = position in the list
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        rows = []
        for row in reader:
            if None in row:
                raise DataFileError(f"{path}:{reader.line_num}: more cells than header columns")
            rows.append((reader.line_num, {k: v for k, v in row.items() if v is not None}))
        return rows
    raise DataFileError(f"{path}: unknown data format {suffix!r}; use one of "
                        f"{', '.join(DATA_SUFFIXES)} or a `datasets` directory")


def _read_datasets(path: Path) -> list[tuple[int, Any]]:
    try:
        import datasets
    except ImportError as exc:
        raise DataFileError(f"{path}: reading a `datasets` directory needs the `datasets` "
                            "package (pip install datasets)") from exc
    try:
        data = datasets.load_from_disk(str(path))
    except Exception as exc:
        raise DataFileError(f"{path}: not a saved `datasets` directory ({exc})") from None
    if isinstance(data, datasets.DatasetDict):
        if "train" not in data and len(data) != 1:
            raise DataFileError(f"{path}: a dataset with splits {sorted(data)}: keep one, or "
                                "name one `train`")
        data = data["train"] if "train" in data else next(iter(data.values()))
    return [(i, dict(row)) for i, row in enumerate(data, 1)]
