"""The one place the local engine's state (data from ``providers/local_engine.py``) becomes sentences, so the
command line, ``scripts/local_engine.py`` and notebook 06 say the same thing. Parameters are shown as they are."""

from __future__ import annotations

from collections.abc import Mapping

from ..display import printable
from ..providers.llama_server_build import ServerBuild
from ..providers.local_engine import (
    PORTABLE_CMAKE_ARGS,
    BuildProgress,
    EngineState,
    EngineStatus,
    Note,
    NoteCode,
    Phase,
)
from ..providers.redaction import redact_url
from .language import Language
from .provider_words import stored_failure_text
from .words import N_, _

_NOTES: Mapping[NoteCode, str] = {
    NoteCode.INTERRUPTED: N_("the last build stopped before it finished (it was interrupted or killed)"),
    NoteCode.NO_NETWORK: N_("pip could not download the packages (no network, or no access to PyPI)"),
    NoteCode.DISK_FULL: N_("the disk filled up during the build"),
    NoteCode.OUT_OF_MEMORY: N_("the compiler ran out of memory"),
    NoteCode.NO_COMPILER: N_("no working {compiler} compiler, which compiling llama.cpp needs"),
    NoteCode.BUILD_FAILED: N_("the build failed with exit code {returncode}"),
    NoteCode.WRONG_PYTHON: N_("the last build succeeded, but this Python ({python}) cannot import {modules}"),
    NoteCode.SMOKE_FAILED: N_("the engine installed, but its one-token smoke test failed: {failure}"),
    NoteCode.NO_BACKGROUND: N_("the background build could not start (see {path})"),
    NoteCode.SERVER_DOWNLOAD: N_("pip could not download the llama-cpp-python source (exit code {returncode})"),
    NoteCode.SERVER_UNPACK: N_("the source archive could not be unpacked"),
    NoteCode.SERVER_CONFIGURE: N_("CMake could not configure llama.cpp (exit code {returncode})"),
    NoteCode.SERVER_COMPILE: N_("compiling llama-server failed (exit code {returncode})"),
    NoteCode.SERVER_NO_BINARY: N_("the build made no llama-server executable"),
    NoteCode.CHECK_NETWORK: N_(
        "Check the network connection or proxy settings (pip's own settings, e.g. PIP_INDEX_URL)"
    ),
    NoteCode.FREE_DISK: N_("Free about 1 GB of disk space"),
    NoteCode.SAVE_MEMORY: N_("Close other programs, or build on one core: CMAKE_BUILD_PARALLEL_LEVEL=1 make local"),
    NoteCode.COMPILER_CONDA: N_(
        "Install a compiler into this conda environment: conda install -c conda-forge compilers"
    ),
    NoteCode.COMPILER_APPLE: N_("Install Apple's command line tools (clang): xcode-select --install"),
    NoteCode.COMPILER_WINDOWS: N_(
        "Install Visual Studio Build Tools with the 'Desktop development with C++' workload "
        "(winget install Microsoft.VisualStudio.2022.BuildTools), then use a Developer PowerShell"
    ),
    NoteCode.COMPILER_PACKAGES: N_("Install gcc and g++: {command}"),
    NoteCode.COMPILER_ANY: N_(
        "Install a C and C++ compiler (gcc and g++, or clang) with your system's package manager"
    ),
    NoteCode.READ_LOG: N_("Read the end of the build log for the cause."),
    NoteCode.PICK_KERNEL: N_("Pick the kernel of the environment the build installed into, or build in this one."),
    NoteCode.REBUILD: N_(
        "`make local` reinstalls llama-cpp-python, compiled for this machine with CMAKE_ARGS={cmake} "
        "(never from a wheel built with other flags)"
    ),
}

_PHASES: Mapping[Phase, str] = {
    Phase.CONFIGURING: N_("downloading and configuring"),
    Phase.COMPILING: N_("compiling"),
    Phase.INSTALLING: N_("installing"),
    Phase.SMOKE_TEST: N_("one-token smoke test in a separate process"),
    Phase.REINSTALLING: N_("reinstalling llama-cpp-python"),
}
_STEPS = (Phase.SMOKE_TEST, Phase.REINSTALLING)  # one step, not a stretch of time: shown without a duration


def note_text(note: Note | None, language: Language | None = None) -> str:
    if note is None:
        return ""
    fields = {name: printable(value) for name, value in note.fields}  # read from a file anyone could have written
    if note.code is NoteCode.SMOKE_FAILED:
        code = fields.pop("failure", "?")
        return _(_NOTES[note.code], language, failure=stored_failure_text(code, fields, language))
    return _(_NOTES[note.code], language, **fields)


def _duration(seconds: float, language: Language | None) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return _("{seconds} s", language, seconds=format(seconds, ".0f"))
    minutes, rest = divmod(round(seconds), 60)
    return _("{minutes} min {seconds} s", language, minutes=minutes, seconds=format(rest, "02d"))


def progress_text(progress: BuildProgress, language: Language | None = None) -> str:
    phase = _(_PHASES[progress.phase], language)
    if progress.phase in _STEPS:
        return phase
    fields = {"phase": phase, "elapsed": _duration(progress.elapsed_seconds, language)}
    done, total = progress.done_steps, progress.total_steps
    if done is not None and total is not None:
        text = _("{phase} ({done}/{total} steps), {elapsed} so far", language, done=done, total=total, **fields)
    else:
        text = _("{phase} for {elapsed}", language, **fields)
    if progress.remaining_seconds is not None:
        text += _(", about {remaining} left", language, remaining=_duration(progress.remaining_seconds, language))
    return text


def engine_summary(status: EngineStatus, language: Language | None = None) -> str:
    if status.state is EngineState.READY and status.shared_url:
        url = redact_url(status.shared_url)
        return _("local engine: ready (the class's shared model server at {url})", language, url=url)
    if status.state is EngineState.READY:
        return _("local engine: ready (llama-cpp-python and the Gemma weights are installed)", language)
    if status.state is EngineState.BUILDING:
        progress = _("started", language) if status.progress is None else progress_text(status.progress, language)
        if status.reason is not None:
            reason = note_text(status.reason, language)
            progress = _("{progress}, because {reason}", language, progress=progress, reason=reason)
        return _("local engine: building in the background, {progress}", language, progress=progress)
    if status.state is EngineState.FAILED:
        reason = note_text(status.reason, language)
        return _("local engine: impossible on this machine for now: {reason}", language, reason=reason)
    return _("local engine: not installed (no build has been started in this environment)", language)


def engine_advice(status: EngineStatus, language: Language | None = None) -> str:
    log = str(status.log_path)
    if status.state is EngineState.READY:
        return ""
    if status.state is EngineState.BUILDING:
        return _(
            "The build log is {log}. When it finishes, run the cells again: "
            "the packages land in this environment, so no restart is needed.",
            language,
            log=log,
        )
    if status.state is EngineState.FAILED:
        retry = _(
            "Then retry with `make local` (builds in the foreground and shows progress) or start `make lab` again "
            "(builds in the background); without make: python scripts/local_engine.py build.",
            language,
        )
        lines = [note_text(status.hint, language), retry, _("The build log is {log}.", language, log=log)]
        return "\n".join(line for line in lines if line)
    return _(
        "Get it with `make local` in the repository root (compiles llama.cpp, about 7 minutes on 2 cores; "
        "needs a C/C++ compiler), or: pip install 'codeagent-lite[local]' with CMAKE_ARGS={cmake}.",
        language,
        cmake=PORTABLE_CMAKE_ARGS,
    )


def engine_report_line(status: EngineStatus, language: Language | None = None) -> str:
    return "\n".join(part for part in (engine_summary(status, language), engine_advice(status, language)) if part)


def server_summary(build: ServerBuild, phase: Phase | None = None, language: Language | None = None) -> str:
    log = str(build.log_path)
    if phase is not None:
        return _("llama-server: {phase} (log: {log})", language, phase=_(_PHASES[phase], language), log=log)
    if build.state is EngineState.READY:
        return _("llama-server: ready ({path})", language, path=str(build.binary))
    if build.state is EngineState.BUILDING:
        return _("llama-server: building in the background (log: {log})", language, log=log)
    if build.state is EngineState.FAILED:
        reason = note_text(build.reason, language)
        return _("llama-server: failed: {reason} (log: {log})", language, reason=reason, log=log)
    return _("llama-server: not built (`make local-server` builds it, several minutes on 2 cores)", language)
