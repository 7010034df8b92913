"""nbgrader's exchange for the class: where releases wait and submissions land, set once for every side.

Every server the hub starts (students and teacher) finds this file through JUPYTER_CONFIG_PATH, and the teacher's
nbgrader commands in classroom/ meet the same folder: the root is nbgrader's own default, /srv/nbgrader/exchange,
unless CAL_NBGRADER_EXCHANGE names another (then export it for the teacher's commands too). On Zero to
JupyterHub a shared volume is mounted at the default path.
"""

import os

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (traitlets provides get_config)

c.Exchange.root = os.environ.get("CAL_NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
c.CourseDirectory.course_id = os.environ.get("CAL_NBGRADER_COURSE", "codeagent-lite")
