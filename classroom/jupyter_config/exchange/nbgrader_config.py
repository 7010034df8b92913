"""nbgrader's exchange for the classroom server: where releases wait and submissions land.

Every server the hub starts (students and teacher) finds this file through JUPYTER_CONFIG_PATH, and so do the
teacher's own nbgrader commands (`JUPYTER_CONFIG_PATH=classroom/jupyter_config/exchange nbgrader ...`), so release,
fetch, submit and collect all meet in the same folder. The hub sets CAL_NBGRADER_EXCHANGE to a folder inside its
state directory; a real deployment mounts a shared volume at the default path instead.
"""

import os

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (traitlets provides get_config)

c.Exchange.root = os.environ.get("CAL_NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
c.CourseDirectory.course_id = os.environ.get("CAL_NBGRADER_COURSE", "codeagent-lite")
