"""The nbgrader course that grades the workbook's exercise book (run nbgrader from inside classroom/).

Each assignment is a folder under source/: source/exercises/05_exercises.ipynb is notebook 05 with its solution
regions, points and hidden tests, and `nbgrader generate_assignment exercises` turns it into the student copy
that ships as notebooks/en/05_exercises.ipynb (scripts/release_exercises.py does that and saves it executed).
source/exercises_zh/ is the Chinese edition (the same code cells, Chinese prose), released as
notebooks/zh/05_exercises.ipynb: a Chinese class is handed `exercises_zh`.
source/build_it_yourself/ (and _zh) is the second assignment: notebook 07, whose graded cells run verify on the
learner's own folder my_json_text/, which the assignment releases (the stubs) and collects beside the notebook.
An assignment folder named *_zh grades in Chinese: the kernel's folder decides the workbook's language
(codeagent_lite/workbook/language.py), so feedback pages of a Chinese class show Chinese self-check texts.
The README's "For teachers: grading" section walks through the whole term.
"""

import sys
from pathlib import Path

# The autograde steps below are flat modules of this folder (outside_grade.py), the teacher's side, not the package's.
sys.path.insert(0, str(Path(__file__).resolve().parent))

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (nbgrader provides get_config when it loads this file)

c.CourseDirectory.course_id = "codeagent-lite"
c.CourseDirectory.root = "."

# The student copy keeps each stub's own `raise NotImplementedError` (written after the solution region), so the
# region becomes a marker comment only. nbgrader's default stub is a bare `raise` at the region's indentation,
# which in exercise 3 (a dict of predictions at the top level of its cell) would make the cell itself raise, and
# "Run all" would stop there.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}

# Grading runs the learners' code: a cell that loops forever costs at most this long (nbgrader then interrupts it
# and counts the cell as failed).
c.Execute.timeout = 30

# The build-it-yourself assignment grades the learner's own files. autograde normally overwrites every non-notebook
# file of a submission with the source's copy ("master versions"), which would grade the stubs instead.
LEARNER_FILES = [
    f"my_json_text/{name}.py" for name in ("__init__", "json_text_messages", "json_text_adapter", "json_action_parser")
]
c.Autograde.exclude_overwriting = {
    "build_it_yourself": LEARNER_FILES,
    "build_it_yourself_zh": LEARNER_FILES,
}

# Collect never follows a link a student left in the exchange, and refuses a submission named after someone else
# (classroom/checked_collect.py; nbgrader's own collect, one safe copy first).
c.ExchangeFactory.collect = "checked_collect.CheckedCollect"

# Grading trust (classroom/GRADING.md). The submission's kernel starts inside bubblewrap (SandboxedExecute: the
# machine read-only, this course folder hidden, no capabilities), so student code cannot write the gradebook or
# read other submissions. Then OutsideJudge decides every graded cell of notebooks 05 and 07 again in this
# process, from the answer cells' source and the learner's files run in fresh sandboxed children, and rewrites
# the cells' outputs to its verdict before SaveAutoGrades reads them: nothing the kernel did changes a score.
c.Autograde.autograde_preprocessors = [
    "outside_grade.SandboxedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "outside_grade.OutsideJudge",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
