"""The workbook's one message catalog: complete, compiled from its .po files, and the only home of Chinese words.

``make catalog`` (Babel) extracts the English ids, merges them into ``codeagent_lite/locale/{zh,en}`` and
compiles the ``.mo`` files, which are committed because flit_core has no build hook. These tests hold the
committed files to what the code and the ``.po`` files say.
"""

from __future__ import annotations

import ast
import gettext
import io
import re
import string
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from codeagent_lite.workbook import words
from codeagent_lite.workbook.language import LANGUAGES

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "codeagent_lite"
ROOM = PACKAGE / "workbook"
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


# Chinese literals that are data, not words to translate: the inputs the checks give a learner's code (it must
# keep Chinese text as it is), and the blog's own section titles, which both editions quote as the blog writes them.
CHINESE_DATA = {
    "workbook/contract.py": {
        "二、消息转换",
        "三、Adapter 调度",
        "四、行动解析",
        "文件不存在：README.md",
        "请帮我读一下 README.md",
        " call 7 · 第七\t",
        "文件读取写入目录模型工具结果错误内容请帮我一下答案第七不存在",
    },
    # notebook 05's self-checks: the Chinese inputs they give a learner's code, and the words by which they recognise
    # a correction written in Chinese (it must name the layer and ask for one object, as an English one must)
    "workbook/exercise_checks.py": {
        '{"type": "final_answer", "content": "答案是 42"}',
        "一二三四",
        "(只|仅|恰好|正好)[^。！？\\n]{0,8}一个\\s*json\\s*对象",
        "路径",
        "说明.md",
        "权限不足",
        "README 里写了什么？",
        "合法json",
        "最外层",
        "字段集合",
        "字段和类型",
        "字段与类型",
        "比较 a.txt 和 b.txt",
        "内容 B",
        "内容 A",
        "权限不足：/etc/hosts 在工作区之外",
        "一个教学项目",
        "第",
        "层",
        '{"type":"final_answer","content":"一个教学项目"}',
        "很长的回答。",
    },
    # a preset reply of the parser playground: a model's answer in Chinese, which the parser must keep as it is
    "workbook/parser_playground.py": {
        '{"type": "final_answer", "content": "README.md 的标题是「从零搭建 Code Agent」"}'
    },
    # the grader's hidden cases: fresh texts drawn from this alphabet, and a fixed history a learner never sees
    "classroom/outside_judge.py": {
        'abcxyz 012_-/"\\\n\t路径说明权限🙂é',
        "az路🙂",
        "只回答一个 JSON 对象",
        'call "9" \\ 末',
        "笔记/a.md",
        "已写入 1 行",
    },
}

KEYWORDS = {**DEFAULT_KEYWORDS, "_p": ((1, "c"), 2)}
"""What ``make catalog`` gives ``pybabel extract`` (``-k _p:1c,2``): the defaults cover ``_`` and ``N_``."""
with (ROOT / "babel.cfg").open(encoding="utf-8") as mapping:
    MAPPING = parse_mapping_cfg(mapping)
"""Which files hold ids, as ``make catalog`` reads it: the package and the teacher's grading modules in classroom/."""


def _po(language: str) -> Catalog:
    with (words.LOCALE_DIR / language / "LC_MESSAGES" / f"{words.DOMAIN}.po").open("rb") as source:
        return read_po(source, locale=language)


def _entries(language: str) -> list[tuple[str, str, str | None, list[str]]]:
    """(id, translation, context, the modules it comes from) of every entry of ``language``'s catalog."""
    return [
        (str(message.id), str(message.string), message.context, [file for file, _line in message.locations])
        for message in _po(language)
        if message.id
    ]


def _fields(text: str) -> set[str] | None:
    """The ``{name}`` placeholders of ``text``; None when it holds literal braces (a JSON example, never filled)."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:
        return None


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_committed_mo_is_the_po_compiled(language: str, tmp_path: Path) -> None:
    compiled = tmp_path / "fresh.mo"
    with compiled.open("wb") as target:
        write_mo(target, _po(language))
    committed = words.LOCALE_DIR / language / "LC_MESSAGES" / f"{words.DOMAIN}.mo"
    fresh = gettext.GNUTranslations(io.BytesIO(compiled.read_bytes()))
    shipped = gettext.GNUTranslations(io.BytesIO(committed.read_bytes()))
    assert shipped._catalog == fresh._catalog, f"run `make catalog`: {committed.name} ({language}) is stale"  # type: ignore[attr-defined]


def test_every_id_in_the_code_is_in_both_catalogs_and_nothing_else_is() -> None:
    in_code = {
        (context, message)
        for _file, _line, message, _comments, context in extract_from_dir(str(ROOT), *MAPPING, keywords=KEYWORDS)
        if isinstance(message, str)
    }
    assert in_code, "the extraction found no ids: is the Babel mapping right?"
    for language in LANGUAGES:
        in_catalog = {(context, message) for message, _, context, _ in _entries(language)}
        assert in_code - in_catalog == set(), f"run `make catalog`: new ids missing from {language}"
        assert in_catalog - in_code == set(), f"run `make catalog`: ids no code says any more in {language}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_entry_is_untranslated_or_fuzzy(language: str) -> None:
    untranslated = [message.id for message in _po(language) if message.id and (not message.string or message.fuzzy)]
    assert untranslated == [], f"{language}: translate these (and clear 'fuzzy'), then `make catalog`"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_translation_keeps_the_placeholders_of_its_id(language: str) -> None:
    changed = [
        (message, translation)
        for message, translation, _, _ in _entries(language)
        if translation and _fields(message) != _fields(translation)
    ]
    assert changed == []


def test_the_chinese_catalog_is_chinese_where_the_english_has_words() -> None:
    # A text of marks, names and code only ("; {summary}", "[OK]   {requirement}") may stay the same.
    code = r"\{\w+\}|[A-Za-z_]+\(|\b[a-z_]+_[a-z_]+\b|Kernel|(?i:provider)\w*|\w*Error|\.py|NaN|--[a-z-]+"
    code += r"|errno|\[[A-Z]+\]"
    english_left = [
        (message, translation)
        for message, translation, _, _ in _entries("zh")
        if translation and re.search(r"[A-Za-z]{3,}", re.sub(code, "", message)) and not HAN.search(translation)
    ]
    assert english_left == []


def test_the_english_catalog_says_the_ids_themselves_unless_polished() -> None:
    # scripts/catalog_english.py fills a new English entry with its id; a different English is a deliberate edit.
    assert all(translation for _, translation, _, _ in _entries("en"))


def test_a_missing_compiled_catalog_is_an_error_not_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(words, "LOCALE_DIR", tmp_path)
    words.catalog.cache_clear()
    try:
        with pytest.raises(FileNotFoundError):
            words._("no answer", "zh")
    finally:
        monkeypatch.undo()
        words.catalog.cache_clear()


def test_words_fill_fields_after_the_lookup_and_leave_a_fieldless_text_alone() -> None:
    assert words._("{file}.py did not load", "zh", file="json_text_adapter") == "json_text_adapter.py 没能加载"
    assert words._("{file}.py did not load", "en", file="x") == "x.py did not load"
    example = 'compact JSON such as {"call_id":"call_1",...}, with no space after "," or ":"'
    assert words._(example, "en") == example
    assert words._("an id the catalog does not hold", "zh") == "an id the catalog does not hold"


def test_the_language_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    assert words._("every check passes") == "每一项检查都通过了"
    monkeypatch.setenv("CAL_LANG", "en")
    assert words._("every check passes") == "every check passes"
    assert words._("every check passes", "zh_CN.UTF-8") == "每一项检查都通过了"


# --------------------------------------------------------------------------- Chinese lives in the catalog only


def _docstrings(tree: ast.Module) -> set[int]:
    """The string statements of a module: docstrings of modules, classes, functions and attributes."""
    found: set[int] = set()
    for node in ast.walk(tree):
        for statement in getattr(node, "body", []) if isinstance(getattr(node, "body", None), list) else []:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                found.add(id(statement.value))
    return found


def _message_ids(tree: ast.Module) -> set[int]:
    """String arguments of ``_``, ``N_`` and ``_p``: English ids, which may quote Chinese data as it is."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"_", "N_", "_p"}:
            found.update(id(part) for argument in node.args for part in ast.walk(argument))
    return found


def _chinese_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _docstrings(tree) | _message_ids(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skipped
        and HAN.search(node.value)
    ]


def _sources() -> list[tuple[str, Path]]:
    """The package's modules (named from inside it, as CHINESE_DATA does) and the scripts a teacher or learner runs;
    tests and benchmarks are data and stay out."""
    package = [(path.relative_to(PACKAGE).as_posix(), path) for path in sorted(PACKAGE.rglob("*.py"))]
    tools = [
        (path.relative_to(ROOT).as_posix(), path)
        for folder in ("scripts", "classroom")
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]
    return package + tools


def test_no_chinese_string_literal_outside_the_catalog() -> None:
    found = []
    for module, path in _sources():
        data = CHINESE_DATA.get(module, set())
        found += [(module, line, text) for line, text in _chinese_literals(path) if text not in data]
    assert found == [], "put these words in the catalog: _('<English>') in the code, the Chinese in the zh .po"


def test_the_chinese_literal_check_finds_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""模块说明：docstrings may be Chinese."""\n'
        "from codeagent_lite.workbook.words import N_, _\n"
        "SAID = _(\"a ToolCall whose call_id is ' call 7 · 第七'\")\n"
        'LABEL = N_("content holding 文件不存在")\n'
        'WRONG = "你好"\n'
        'ALSO = f"{SAID}：还没写"\n',
        encoding="utf-8",
    )
    assert [text for _, text in _chinese_literals(sample)] == ["你好", "：还没写"]


def test_no_module_keeps_a_hand_made_table() -> None:
    tables = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in ROOM.glob("*.py")
        if re.search(r"\bMessages\(", path.read_text(encoding="utf-8"))
    )
    assert tables == [], "move these tables' words to the catalog (words' docstring says how)"


def _shadowing_assignments(path: Path) -> list[int]:
    """Lines binding ``_`` as a variable (``role, _ = pair``) where ``_`` is the catalog's function: that call
    would then raise TypeError, in the one branch that shows the message. Comprehensions have their own scope."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_comprehension = {
        id(node)
        for comprehension in ast.walk(tree)
        if isinstance(comprehension, ast.comprehension)
        for node in ast.walk(comprehension.target)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and node.id == "_"
        and isinstance(node.ctx, ast.Store)
        and id(node) not in in_comprehension
    ]


def test_no_module_that_speaks_through_the_catalog_binds_underscore() -> None:
    speaking = [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if re.search(r"^from \S*words import .*\b_\b|^def _\(", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert len(speaking) >= 6, speaking
    found = {
        path.relative_to(PACKAGE).as_posix(): lines for path in speaking if (lines := _shadowing_assignments(path))
    }
    assert found == {}, "name the value instead (_role, _rest): `_` is the catalog's function there"


def test_the_shadowing_check_finds_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(pair):\n    role, _ = pair\n    return [x for x, _ in pair]\n", encoding="utf-8")
    assert _shadowing_assignments(sample) == [2]


def _ids_inside_f_strings(path: Path) -> list[int]:
    """Lines where ``_("…")`` is written inside an f-string: ``pybabel extract`` does not look there, so that id
    never reaches the catalog and the Chinese edition shows it in English."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        {
            node.lineno
            for joined in ast.walk(tree)
            if isinstance(joined, ast.JoinedStr)
            for node in ast.walk(joined)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"_", "N_", "_p"}
            and any(isinstance(argument, ast.Constant) for argument in node.args)
        }
    )


def test_no_message_id_is_written_inside_an_f_string() -> None:
    found = {module: lines for module, path in _sources() if (lines := _ids_inside_f_strings(path))}
    assert found == {}, "name the words first (said = _('…')), then put `said` in the f-string"


def test_the_f_string_check_finds_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('said = _("x")\nA = f"{said}"\nB = f"<b>{_(\'hidden\')}</b>"\n', encoding="utf-8")
    assert _ids_inside_f_strings(sample) == [3]
