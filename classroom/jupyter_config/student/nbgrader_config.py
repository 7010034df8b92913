"""Students submit under their hub name.

nbgrader names a submission after the operating-system account that makes it, but the single-machine hub runs
every student's server under one account (SimpleLocalProcessSpawner), so without this every submission would carry
the same name. JupyterHub puts the student's name in JUPYTERHUB_USER. Only students' servers read this folder: on
the teacher's side a student_id would limit collect and autograde to one student.
"""

import os

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (traitlets provides get_config)

student = os.environ.get("JUPYTERHUB_USER", "")
if student:
    c.CourseDirectory.student_id = student
