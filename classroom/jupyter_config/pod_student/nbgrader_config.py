"""Zero to JupyterHub only: a student's pod submits under the student's hub name.

nbgrader names a submission after the operating-system account that makes it (pwd.getpwuid(os.getuid())), but a
pod's /etc/passwd knows only the image's user, not the uid the hub gave this student's pod. JupyterHub puts the
student's name in JUPYTERHUB_USER. On one machine each student is a real account, so this file is not used there
(classroom/jupyterhub_config.py): nbgrader's own account lookup names the submission, and nobody can choose it.
"""

import os

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (traitlets provides get_config)

student = os.environ.get("JUPYTERHUB_USER", "")
if student:
    c.CourseDirectory.student_id = student
