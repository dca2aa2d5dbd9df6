"""Files crossing the web boundary (ui/web_files.py) on the shared app, issue 31 items 1, 2, 3 and 7: each
received upload is claimed by the request that uses it (a link or a copy in a folder of its own), so the
same file picked twice and two identical uploads at once both work; names gradio_client cuts to 200 bytes
stay apart; every refusal names the file and the reason."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.text_pdf import write_text_pdf
from tests.ui.conftest import RunningApp
from tests.ui.web_support import Web, file_data, outputs, uploads_left
from ui.web_files import NOT_RECEIVED

pytestmark = pytest.mark.slow


def small_pdf(folder: Path, name: str, word: str) -> Path:
    """A one-page PDF about ``word``: a different word, a different file."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_text_pdf(folder / name, [[f"DocLens {word} test page: the {word} sample is described here."]])


@pytest.fixture
def kb(doclens_app: RunningApp, request: pytest.FixtureRequest) -> Iterator[str]:
    """A knowledge base of the test's own on the shared app, deleted afterwards."""
    web = Web(doclens_app.url)
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40]
    assert web.call("create_kb", name)[0] == "complete"
    yield name
    web.call("delete_kb", name)


def documents(web: Web, kb: str) -> list[str]:
    return sorted(d["file"] for d in web.call("documents", kb)[1])


def kb_tab_upload(web: Web, kb: str, files: list[dict]) -> str:
    """The Knowledge base tab's Upload, then its timer until the job is done: the status it ends with."""
    status, _table, _timer, _files, browser = outputs(web.queue("kb_upload", kb, files, None))
    assert status and "⚠" not in status and "warn" not in status, status
    for _ in range(120):
        status, _table, _picker, timer, _cancel_row, _cancel_pick = outputs(web.queue("kb_upload_poll", kb, browser))
        if isinstance(timer, dict) and timer.get("active") is False:
            return status
        time.sleep(0.5)
    raise AssertionError(f"the upload did not end: {status}")


# ---------------------------------------------------------------- items 1 and 7: the same file twice


def test_the_same_file_picked_twice_in_one_upload_is_a_duplicate_and_the_rest_is_indexed(
    doclens_app: RunningApp, kb: str, tmp_path: Path
) -> None:
    before, web = uploads_left(doclens_app), Web(doclens_app.url)
    basalt, granite = small_pdf(tmp_path, "basalt.pdf", "basalt"), small_pdf(tmp_path, "granite.pdf", "granite")
    paths = web.upload_many([(basalt, basalt.name), (basalt, basalt.name), (granite, granite.name)])
    assert paths[0] == paths[1], "Gradio keeps both picks in one content-addressed place"
    names = [basalt.name, basalt.name, granite.name]
    event, results = web.call("upload", kb, [file_data(p, n) for p, n in zip(paths, names)])
    assert event == "complete", results
    assert [r["status"] for r in results] == ["indexed", "duplicate", "indexed"], results
    assert results[1]["error"].startswith("basalt.pdf: ") and "same content" in results[1]["error"]
    assert uploads_left(doclens_app, before) == [], "nothing is left in Gradio's folder or doclens-claimed/"

    # The Knowledge base tab's own upload (item 7: it answered with an empty error)
    dolerite = small_pdf(tmp_path, "dolerite.pdf", "dolerite")
    paths = web.upload_many([(dolerite, dolerite.name), (dolerite, dolerite.name)])
    status = kb_tab_upload(web, kb, [file_data(p, dolerite.name) for p in paths])
    assert "dolerite.pdf" in status and "same content" in status, status
    assert documents(web, kb) == ["basalt.pdf", "dolerite.pdf", "granite.pdf"]
    assert uploads_left(doclens_app, before) == []


# ---------------------------------------------------------------- item 2: two identical uploads at once


def test_two_identical_uploads_at_the_same_moment_both_succeed(
    doclens_app: RunningApp, kb: str, tmp_path: Path
) -> None:
    """Both land on the same path in Gradio's folder; each upload is one claim, so neither is refused: one
    is indexed, the other is the same content again."""
    before, basalt = uploads_left(doclens_app), small_pdf(tmp_path, "basalt.pdf", "basalt")
    first, second = Web(doclens_app.url), Web(doclens_app.url)
    paths = [first.upload(basalt), second.upload(basalt)]
    assert paths[0] == paths[1]
    answers: dict[int, tuple] = {}

    def send(index: int, web: Web) -> None:
        answers[index] = web.call("upload", kb, [file_data(paths[index], basalt.name)])

    threads = [threading.Thread(target=send, args=(i, web)) for i, web in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert [answers[i][0] for i in (0, 1)] == ["complete", "complete"], answers
    assert sorted(answers[i][1][0]["status"] for i in (0, 1)) == ["duplicate", "indexed"], answers
    assert uploads_left(doclens_app, before) == []
    event, message = first.call("upload", kb, [file_data(paths[0], basalt.name)])  # two uploads, two uses
    assert event == "error" and NOT_RECEIVED in message


# ---------------------------------------------------------------- item 3: names cut by gradio_client


def test_different_files_whose_names_gradio_client_cuts_alike_are_both_kept(
    doclens_app: RunningApp, kb: str, tmp_path: Path
) -> None:
    """gradio_client cuts a name to 200 bytes before the server sees it: two different files whose names
    differ only after that are kept as two documents, the second under "… (2).pdf" with a note; in one
    upload or in two."""
    from gradio_client import Client, handle_file

    common = ("Proceedings of the symposium on volcanic rocks and their weathering " * 4)[:238]
    files = [small_pdf(tmp_path / word, f"{common} {word}.pdf", word) for word in ("basalt", "granite", "gabbro")]
    assert all(len(f.name.encode()) > 200 for f in files)
    before, client = uploads_left(doclens_app), Client(doclens_app.url, verbose=False)
    first = client.predict(kb, [handle_file(str(files[0]))], api_name="/upload")[0]
    second = client.predict(kb, [handle_file(str(files[1]))], api_name="/upload")[0]
    assert (first["status"], second["status"]) == ("indexed", "indexed"), second
    cut = first["file"]
    assert len(cut.encode()) <= 200 and second["file"] == cut[: -len(".pdf")] + " (2).pdf"
    assert second["error"].startswith(second["file"] + ": ") and f"'{cut}'" in second["error"], second
    assert "200 bytes" in second["error"]
    both = client.predict(kb, [handle_file(str(files[2])), handle_file(str(files[1]))], api_name="/upload")
    assert [r["status"] for r in both] == ["indexed", "duplicate"], both
    assert both[0]["file"] == cut[: -len(".pdf")] + " (3).pdf"
    assert sorted(d["file"] for d in client.predict(kb, api_name="/documents")) == sorted(
        [cut, second["file"], both[0]["file"]]
    )
    assert uploads_left(doclens_app, before) == []


# ---------------------------------------------------------------- item 7: refusals name the file


def test_a_refused_server_path_names_the_file_and_the_reason(doclens_app: RunningApp, kb: str, tmp_path: Path) -> None:
    """A FileData with ``meta`` naming a server path: the same message whether the path exists or not,
    naming the file as the caller called it, never the path."""
    web = Web(doclens_app.url)
    secret = small_pdf(tmp_path, "secret.pdf", "secret")
    messages = []
    for path in (secret, tmp_path / "missing.pdf"):
        for endpoint, extra in (("upload", []), ("kb_upload", [None])):
            event, message = web.call(endpoint, kb, [file_data(str(path), "report.pdf")], *extra)
            text = message if event == "error" else message[0]
            assert text and "report.pdf" in text and NOT_RECEIVED in text, (endpoint, event, message)
            messages.append(text)
    assert len(set(messages[::2])) == 1 and len(set(messages[1::2])) == 1, "no hint which paths exist"
    assert str(tmp_path) not in "".join(messages)
    assert documents(web, kb) == [] and secret.exists()
