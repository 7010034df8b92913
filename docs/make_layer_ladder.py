"""Draw docs/layer-ladder.svg, the README's picture of the parser's four layers and where each reply is refused.

The picture is drawn from the package itself: the layer names are the ones the workbook prints in each language
(``codeagent_lite.workbook.ladder.layer_title``), and the layer each example reply stops at is what ``diagnose``
says about it today, so the image cannot drift from the parser. ``tests/test_project_files.py`` redraws it and
fails when the committed file differs. Run from the repository's root::

    python docs/make_layer_ladder.py
"""

from __future__ import annotations

import html
import sys
from pathlib import Path

from codeagent_lite.diagnosis import LayerStatus, diagnose
from codeagent_lite.model_adapter import ValidationLayer
from codeagent_lite.workbook.ladder import layer_title

OUTPUT = Path(__file__).resolve().parent / "layer-ladder.svg"

EXAMPLES = (
    'Sure! {"type": "final_answer", ...}',
    '["read_file", "README.md"]',
    '{"type": "tool_result"}',
    '{"type": "final_answer"}',
)
"""One reply that each layer refuses, in layer order: the picture checks that each really stops where it is drawn."""

ACCEPTED = '{"type": "final_answer", "content": "42"}'

WIDTH, ROW, TOP, BOX_X, BOX_W, BOX_H = 860, 78, 96, 40, 330, 52
FONT = "'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei', 'WenQuanYi Micro Hei', sans-serif"
MONO = "'DejaVu Sans Mono', Menlo, Consolas, monospace"


def _text(
    x: float,
    y: float,
    words: str,
    *,
    size: int = 15,
    weight: str = "normal",
    fill: str = "#1f2328",
    family: str = FONT,
    anchor: str = "start",
) -> str:
    return (
        f'<text x="{x}" y="{y}" font-family="{family}" font-size="{size}" font-weight="{weight}" '
        f'fill="{fill}" text-anchor="{anchor}">{html.escape(words)}</text>'
    )


def _stopping_layer(reply: str) -> ValidationLayer | None:
    """The layer that refuses ``reply`` (None when every layer passes it)."""
    for outcome in diagnose(reply).outcomes:
        if outcome.status is LayerStatus.FAILED:
            return outcome.layer
    return None


def draw() -> str:
    layers = list(ValidationLayer)
    for layer, reply in zip(layers, EXAMPLES, strict=True):
        stopped = _stopping_layer(reply)
        if stopped is not layer:
            raise SystemExit(f"the example {reply!r} is refused at {stopped}, not at {layer}: update EXAMPLES")
    if _stopping_layer(ACCEPTED) is not None:
        raise SystemExit(f"{ACCEPTED!r} is no longer accepted: update ACCEPTED")
    height = TOP + ROW * len(layers) + 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        'role="img" aria-label="四层校验 · the four validation layers">',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        _text(BOX_X, 34, "模型的原始回复 · the model's raw reply (untrusted text)", size=17, weight="bold"),
        _text(
            BOX_X,
            60,
            "逐层检查，第一个拒绝的校验层就此停下 · checked layer by layer; the first refusal stops it",
            size=13,
            fill="#57606a",
        ),
        f'<line x1="{BOX_X + BOX_W / 2}" y1="68" x2="{BOX_X + BOX_W / 2}" y2="{TOP}" stroke="#57606a" '
        'stroke-width="2" marker-end="url(#arrow)"/>',
        '<defs><marker id="arrow" markerWidth="10" markerHeight="10" refX="8" refY="5" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker>'
        '<marker id="stop" markerWidth="10" markerHeight="10" refX="8" refY="5" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#cf222e"/></marker></defs>',
    ]
    for index, (layer, reply) in enumerate(zip(layers, EXAMPLES, strict=True)):
        y = TOP + ROW * index
        parts.append(
            f'<rect x="{BOX_X}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="8" fill="#ddf4ff" '
            'stroke="#0969da" stroke-width="1.5"/>'
        )
        parts.append(
            _text(
                BOX_X + 16,
                y + 23,
                f"第 {layer.value} 层 · {layer_title(layer, 'zh')}",
                size=16,
                weight="bold",
                fill="#0a3069",
            )
        )
        parts.append(
            _text(BOX_X + 16, y + 42, f"layer {layer.value} · {layer_title(layer, 'en')}", size=13, fill="#0a3069")
        )
        middle = y + BOX_H / 2
        parts.append(
            f'<line x1="{BOX_X + BOX_W}" y1="{middle}" x2="{BOX_X + BOX_W + 52}" y2="{middle}" '
            'stroke="#cf222e" stroke-width="2" marker-end="url(#stop)"/>'
        )
        parts.append(_text(BOX_X + BOX_W + 62, middle - 4, f"✘ {reply}", size=13, fill="#cf222e", family=MONO))
        parts.append(_text(BOX_X + BOX_W + 62, middle + 15, "在这一层被拒绝 · refused here", size=12, fill="#57606a"))
        if index + 1 < len(layers):
            parts.append(
                f'<line x1="{BOX_X + BOX_W / 2}" y1="{y + BOX_H}" x2="{BOX_X + BOX_W / 2}" '
                f'y2="{y + ROW}" stroke="#1a7f37" stroke-width="2" marker-end="url(#arrow)"/>'
            )
            parts.append(_text(BOX_X + BOX_W / 2 + 10, y + BOX_H + 18, "✔", size=13, fill="#1a7f37"))
    y = TOP + ROW * len(layers)
    parts.append(
        f'<line x1="{BOX_X + BOX_W / 2}" y1="{y - ROW + BOX_H}" x2="{BOX_X + BOX_W / 2}" y2="{y + 4}" '
        'stroke="#1a7f37" stroke-width="2" marker-end="url(#arrow)"/>'
    )
    parts.append(
        _text(
            BOX_X,
            y + 30,
            "✔ 合法的行动：ToolCall 或 FinalAnswer · a checked action",
            size=16,
            weight="bold",
            fill="#1a7f37",
        )
    )
    parts.append(_text(BOX_X, y + 52, ACCEPTED, size=13, fill="#1a7f37", family=MONO))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> int:
    OUTPUT.write_text(draw(), encoding="utf-8")
    print(f"wrote {OUTPUT.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
