"""Read NVIDIA's release-notes pages (tests/data/seeds) and our generated Markdown into comparable facts.

The seeds are text flattened from HTML: headings are bare lines, list items are lines (20.02 keeps
"•" bullets), the versions table lost its merged cells. The same sentence parsers read the driver and
GPU requirements of both the seed and our notes, so the comparison is of facts, not of layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SEEDS = Path(__file__).resolve().parent / "data" / "seeds"
SEED_HEADINGS = ("Contents of the PyTorch container", "Driver Requirements", "GPU Requirements",
                 "Key Features and Enhancements", "Announcements", "NVIDIA PyTorch Container Versions",
                 "Automatic Mixed Precision (AMP)", "Tensor Core Examples", "Known Issues")
_VERSION = r"[0-9][0-9A-Za-z.+_-]*[0-9A-Za-z]|[0-9]"


def seed(release: str) -> str:
    return (SEEDS / f"pytorch-release-{release}.txt").read_text(encoding="utf-8")


def normalize(text: str) -> str:
    """Whitespace collapsed, no trademark signs, no space before punctuation, no trailing period."""
    text = text.replace("™", "").replace("\u2019", "'")
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([.,:;)])", r"\1", text)
    text = re.sub(r"\(\s+", "(", text)
    return text.rstrip(" .")


def plain(markdown_text: str) -> str:
    """Our Markdown as text: no footnote references, escapes, code ticks or emphasis. A power
    ("2^31") is flattened as the seeds flattened NVIDIA's superscripts ("2<sup>31</sup>" -> "231")."""
    text = re.sub(r"\[\^[a-z]+\]", "", markdown_text)
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"(?<=[0-9])\^(?=[0-9])", "", text)
    return text.replace("`", "").replace("**", "")


# --- the seed pages ---------------------------------------------------------------------------------

def seed_sections(text: str) -> dict[str, str]:
    """Heading -> body. A heading is a line that is exactly one of NVIDIA's section names."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        if line.strip() in SEED_HEADINGS:
            current = line.strip()
            sections[current] = []
        else:
            sections[current].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


@dataclass(frozen=True)
class SeedItem:
    text: str  # normalized, parentheticals dropped ("NVIDIA NCCL 2.8.3")
    group: str | None  # "Tensor Core optimized examples", "Jupyter and JupyterLab" or None


def also_includes(text: str) -> list[SeedItem]:
    contents = seed_sections(text)["Contents of the PyTorch container"]
    lines = contents.split("The container also includes the following:", 1)[1].splitlines()
    items, group = [], None
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if line.endswith(":"):
            group = line[:-1]
            continue
        items.append(SeedItem(normalize(re.sub(r"\([^)]*\)", "", line)), group))
    return items


def versions_in(item: str) -> list[str]:
    return re.findall(rf"(?<![\w.])(?:{_VERSION}|r[0-9]+\.[0-9]+)(?![\w.])", item)


@dataclass(frozen=True)
class Requirements:
    cuda: str | None
    minimum: str | None
    branches: tuple[str, ...]
    capability: str | None
    families: tuple[str, ...]


def _split_words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+", text) if w.strip())


def requirements(driver_text: str, gpu_text: str) -> Requirements:
    """Facts of the two requirement sections, from NVIDIA's sentences (ours use the same ones)."""
    driver_text, gpu_text = normalize(driver_text), normalize(gpu_text)
    cuda = re.search(rf"based on (?:NVIDIA )?CUDA ({_VERSION})", driver_text)
    minimum = re.search(r"requires NVIDIA Driver release (.+?)\.(?: |$)", driver_text)
    branches = re.search(r"you may use NVIDIA driver release (.+?)\.(?: |$)", driver_text)
    capability = re.search(r"compute capability ([0-9]+\.[0-9]+) and (?:higher|later)", gpu_text)
    families = re.search(r"GPUs in the (.+?) (?:GPU architecture )?families", gpu_text)
    return Requirements(
        cuda=cuda[1] if cuda else None,
        minimum=minimum[1] if minimum else None,
        branches=_split_words(branches[1]) if branches else (),
        capability=capability[1] if capability else None,
        families=_split_words(families[1]) if families else (),
    )


def seed_requirements(text: str) -> Requirements:
    sections = seed_sections(text)
    return requirements(sections["Driver Requirements"], sections.get("GPU Requirements", ""))


def seed_lines(section: str) -> list[str]:
    """Statements of a seed section: one per line, bullets and flattening debris removed. Lines
    that begin mid-sentence (a lost link's leftovers: ", use", "for information", "if you") are
    dropped; of the others, the first sentence is kept."""
    out = []
    for line in section.splitlines():
        line = line.strip().lstrip("•").strip()
        line = line.removeprefix(". ")
        if not line or not line[0].isupper() and not line[0].isdigit():
            continue
        if line == "This PyTorch release includes the following key features and enhancements.":
            continue
        first = re.split(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])", normalize(line), maxsplit=1)[0]
        out.append(normalize(first))
    return out


@dataclass(frozen=True)
class TableRow:
    release: str
    ubuntu: str
    cuda: str
    pytorch: str
    tensorrt: str


def seed_table(text: str) -> list[TableRow]:
    """The versions table of a seed, with NVIDIA's merged cells filled in.

    The flattened table is a run of cells; a row starts at its container version. A merged cell
    appears once, in the first row it spans, so a row without a value takes the one above. Container
    versions descend, so a YY.MM cell that is not lower than the next container version is an
    Ubuntu version (18.04), not a row."""
    body = seed_sections(text)["NVIDIA PyTorch Container Versions"]
    body = body.split("Container Version\tUbuntu\tCUDA Toolkit\tPyTorch\tTensorRT", 1)[1]
    cells = [c.strip() for c in re.split(r"[\t\n]", body) if c.strip()]
    dated = [i for i, c in enumerate(cells) if re.fullmatch(r"[0-9]{2}\.[0-9]{2}", c)]
    starts, lowest = [], None
    for i in reversed(dated):  # oldest row last in the page: walk upwards, versions must rise
        if lowest is None or cells[i] > lowest:
            starts.append(i)
            lowest = cells[i]
    starts.reverse()
    rows, above = [], {}
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(cells)
        values = dict(above)
        for cell in cells[start + 1:end]:
            if cell.startswith("NVIDIA CUDA "):
                values["cuda"] = cell
            elif cell.startswith("TensorRT "):
                values["tensorrt"] = cell
            elif re.fullmatch(r"[0-9]{2}\.[0-9]{2}", cell):
                values["ubuntu"] = cell
            else:
                values["pytorch"] = cell
        rows.append(TableRow(cells[start], values["ubuntu"], values["cuda"], values["pytorch"], values["tensorrt"]))
        above = values
    return rows


# --- our notes --------------------------------------------------------------------------------------

def notes_sections(markdown_text: str) -> dict[str, str]:
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in markdown_text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        else:
            sections[current].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def notes_headings(markdown_text: str) -> list[str]:
    return [line[3:].strip() for line in markdown_text.splitlines() if line.startswith("## ")]


def notes_list_items(section: str) -> list[str]:
    return [normalize(plain(m)) for m in re.findall(r"^\s*- (.+)$", section, flags=re.MULTILINE)]


def notes_also_includes(markdown_text: str) -> list[str]:
    contents = notes_sections(markdown_text)["Contents of the PyTorch container"]
    return notes_list_items(contents.split("The container also includes the following:", 1)[1])


def notes_table(markdown_text: str) -> dict[str, TableRow]:
    section = plain(notes_sections(markdown_text)["NVIDIA PyTorch Container Versions"])
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"[0-9]{2}\.[0-9]{2}|[a-z][a-z0-9-]*", cells[0]):
            rows[cells[0]] = TableRow(*cells)
    return rows


def notes_requirements(markdown_text: str) -> Requirements:
    sections = notes_sections(markdown_text)
    return requirements(plain(sections["Driver Requirements"]), plain(sections["GPU Requirements"]))


def contains_item(items: list[str], wanted: str) -> bool:
    """`wanted` ("NVIDIA cuDNN 8.0.5") is in one of `items`, not as part of a longer name or version."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(wanted)}(?![\w.+])")
    return any(pattern.search(item) for item in items)
