"""A student's server keeps nbgrader's Assignments tab and its validate button, without the teacher's tools.

nbgrader enables all four of its server extensions for the whole environment; the formgrader (grading) and the
course list belong to the teacher, as nbgrader's documentation for shared environments advises.
"""

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (traitlets provides get_config)

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.validate_assignment": True,
}
