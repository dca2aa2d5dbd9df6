"""The web app under attack (issue 11 items 1, 2, 3, 14; issue 12 items 12, 13): real servers on
127.0.0.1, real Gradio HTTP requests (the ``/call`` API, the browser's queue protocol, ``/upload``,
``/file=``), real PDFs and the recording OpenAI fake."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from backend.errors import DocLensError, SettingsError
from backend.settings import load_settings
from tests.support.fake_openai import FakeOpenAI
from tests.ui.conftest import (
    REPO_ROOT,
    SAMPLE_PDF,
    RunningApp,
    app_environment,
    free_port,
    upload_dir_for,
    wait_until_serving,
)
from tests.ui.web_support import Web, file_data, log_since, log_size, outputs, uploads_left
from ui.common import ALL_DOCUMENTS  # the doc filter's "all documents" value
from ui.knowledge_bases.handlers import eval_inputs
from ui.web_files import NOT_RECEIVED, ReceivedUploads, UploadRefused

pytestmark = pytest.mark.slow

KB = "security"
OPERATOR_KEY = "sk-test-ui"  # what tests/ui/conftest.py gives the shared app


@pytest.fixture(scope="module")
def indexed(doclens_app: RunningApp) -> RunningApp:
    """The shared app with one knowledge base holding the sample PDF, uploaded as a browser does."""
    web = Web(doclens_app.url)
    assert web.call("create_kb", KB)[0] == "complete"
    server_path = web.upload(SAMPLE_PDF)
    event, results = web.call("upload", KB, [file_data(server_path, SAMPLE_PDF.name)])
    assert event == "complete" and [r["status"] for r in results] == ["indexed"], results
    assert not Path(server_path).exists(), "an upload is deleted once indexed"
    return doclens_app


# ---------------------------------------------------------------- item 1: no server file read


def test_upload_refuses_files_gradio_did_not_receive(indexed: RunningApp, tmp_path: Path) -> None:
    folder = tmp_path / "server-folder"
    folder.mkdir()
    shutil.copyfile(SAMPLE_PDF, folder / "secret.pdf")
    web = Web(indexed.url)
    before = [d["file"] for d in web.call("documents", KB)[1]]
    assert before == [SAMPLE_PDF.name]
    messages = []
    for entry in (
        {"path": str(folder), "orig_name": "d.pdf"},  # the reported attack: no meta
        {"path": str(folder / "secret.pdf"), "orig_name": "d.pdf"},
        {"path": str(tmp_path / "missing.pdf"), "orig_name": "d.pdf"},
        file_data(str(folder / "secret.pdf")),
    ):
        event, message = web.call("upload", KB, [entry])
        assert event == "error", message
        messages.append(message)
    assert len(set(messages[:3])) == 1, "the message must not tell which server paths exist"
    assert NOT_RECEIVED in messages[0] and str(folder) not in messages[0]
    # Gradio checks FileData with meta is inside its upload folder; being there is not enough either
    planted = indexed.upload_dir / "planted" / "other.pdf"
    planted.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SAMPLE_PDF, planted)
    for endpoint in ("upload", "kb_upload"):  # the API and the KB tab's event
        browser = [None] if endpoint == "kb_upload" else []  # the KB tab's event also gets the browser id
        event, result = web.call(endpoint, KB, [file_data(str(planted), "planted.pdf")], *browser)
        assert NOT_RECEIVED in (result if event == "error" else result[0]), result
    assert planted.exists(), "a file the upload did not receive is not ours to delete"
    shutil.rmtree(planted.parent)
    assert [d["file"] for d in web.call("documents", KB)[1]] == before, "nothing from the server was indexed"
    assert (folder / "secret.pdf").exists(), "refusing never deletes files outside the upload folder"


def test_evaluation_reads_only_the_operators_bench_folder(indexed: RunningApp, tmp_path: Path) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"question": "What?", "doc": SAMPLE_PDF.name}) + "\n", encoding="utf-8")
    event, report = Web(indexed.url).call("kb_eval", KB, str(qa), str(SAMPLE_PDF.parent), False, ["dense"], 1)
    assert event == "complete"
    assert "bench folder" in report and "ui.eval_dir" in report, report


def test_links_and_folders_in_the_upload_folder_are_refused(tmp_path: Path) -> None:
    import gradio as gr

    upload_dir, outside = tmp_path / "gradio", tmp_path / "outside"
    (upload_dir / "a1").mkdir(parents=True)
    outside.mkdir()
    shutil.copyfile(SAMPLE_PDF, outside / "secret.pdf")
    link = upload_dir / "a1" / "x.pdf"
    link.symlink_to(outside / "secret.pdf")
    received = upload_dir / "b2" / "ok.pdf"
    received.parent.mkdir()
    shutil.copyfile(SAMPLE_PDF, received)
    blocks = gr.Blocks()
    blocks.upload_file_set.update({str(link), str(upload_dir / "a1"), str(received)})  # as if received
    gate = ReceivedUploads(blocks, upload_dir)
    for entry in (link, upload_dir / "a1"):
        with pytest.raises(UploadRefused, match="not received"):
            gate.admit([file_data(str(entry)), file_data(str(received))])
    assert (outside / "secret.pdf").exists(), "a link's target outside the upload folder is never deleted"
    assert not received.exists(), "a refused request's own uploads are discarded too"


def test_evaluation_paths_stay_inside_the_bench_folder(tmp_path: Path) -> None:
    bench, outside = tmp_path / "bench", tmp_path / "outside"
    (bench / "set").mkdir(parents=True)
    outside.mkdir()
    (bench / "set" / "qa.jsonl").write_text("{}\n", encoding="utf-8")
    (outside / "qa.jsonl").write_text("{}\n", encoding="utf-8")
    (bench / "escape.jsonl").symlink_to(outside / "qa.jsonl")
    assert eval_inputs(str(bench), "set/qa.jsonl", "") == (
        (bench / "set" / "qa.jsonl").resolve(),
        (bench / "set").resolve(),
    )
    refused = []
    for typed in (str(outside / "qa.jsonl"), "../outside/qa.jsonl", "escape.jsonl", "set/missing.jsonl"):
        with pytest.raises(DocLensError) as error:
            eval_inputs(str(bench), typed, "")
        refused.append(str(error.value).replace(typed, "<typed>"))
    assert len(set(refused)) == 1 and "not found in the bench folder" in refused[0]
    with pytest.raises(DocLensError, match="ui.eval_dir"):
        eval_inputs("", "set/qa.jsonl", "")


# ---------------------------------------------------------------- items 1 and 14: uploads are used once


def test_received_uploads_are_deleted_once_indexed_or_refused(indexed: RunningApp, tmp_path: Path) -> None:
    web = Web(indexed.url)
    before = uploads_left(indexed)
    not_pdf = tmp_path / "notes.pdf"
    not_pdf.write_text("not a PDF at all", encoding="utf-8")
    server_path = web.upload(not_pdf)
    assert Path(server_path).exists()
    event, results = web.call("upload", KB, [file_data(server_path, "notes.pdf")])
    assert event == "complete" and results[0]["status"] == "failed", results
    assert not Path(server_path).exists() and uploads_left(indexed, before) == []
    event, message = web.call("upload", KB, [file_data(server_path, "notes.pdf")])  # used once only
    assert event == "error" and NOT_RECEIVED in message


def test_uploads_left_are_deleted_when_the_server_stops(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    log_path = tmp_path / "app.log"
    with FakeOpenAI() as fake, open(log_path, "w", encoding="utf-8") as log_file:
        process = subprocess.Popen(
            [sys.executable, "main.py", "serve", "--port", str(port)],
            cwd=REPO_ROOT,
            env=app_environment(data_dir, fake),
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until_serving(f"http://127.0.0.1:{port}/", process, log_path)
            server_path = Path(Web(f"http://127.0.0.1:{port}").upload(SAMPLE_PDF))
            assert server_path.exists() and server_path.is_relative_to(upload_dir_for(data_dir))
        finally:
            process.terminate()
            process.wait(timeout=60)
    assert not server_path.exists(), "an upload nobody used must not outlive the server"
    assert not any(p.is_file() for p in upload_dir_for(data_dir).rglob("*"))


# ---------------------------------------------------------------- item 3: nothing else is downloadable


def test_data_folder_is_not_downloadable_but_shown_images_are(indexed: RunningApp) -> None:
    web = Web(indexed.url)
    collection = next(kb["collection"] for kb in web.call("list_kbs")[1] if kb["name"] == KB)
    folder = indexed.data_dir / "kbs" / collection
    originals = list((folder / "files").glob("*.pdf"))
    assert originals and (folder / "registry.sqlite3").exists()
    for private in [folder / "registry.sqlite3", originals[0], indexed.data_dir / "milvus.db", folder]:
        assert web.file(str(private)).status_code in (403, 404), private
    event, (gallery, _figures) = web.call("chat_kb_figures", KB, ALL_DOCUMENTS)
    gallery = gallery.get("value") if isinstance(gallery, dict) else gallery
    assert event == "complete" and gallery, "the sample PDF has a figure"
    image = gallery[0]["image"]
    assert not Path(image["path"]).is_relative_to(indexed.data_dir)
    shown = web.http.get(image["url"])
    assert shown.status_code == 200 and shown.content[:8] == b"\x89PNG\r\n\x1a\n"


def test_serve_on_an_open_address_without_login_refuses_to_start(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        env = app_environment(tmp_path / "data", fake)
        try:
            done = subprocess.run(
                [sys.executable, "main.py", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
                cwd=REPO_ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=90,
            )
        except subprocess.TimeoutExpired:
            pytest.fail("the server started on 0.0.0.0 without a login")
    assert done.returncode == 1, done.stderr
    assert "without a login" in done.stderr and "--insecure" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------- item 2: the operator's key stays home


def ask_from_page(web: Web, question: str) -> list:
    """The Chat tab's send event (question, kb, document, chatbot, turns, figure lock, every answer's
    sources, session profile, other knowledge bases asked too)."""
    return outputs(web.queue("chat_send", question, KB, ALL_DOCUMENTS, [], [], None, [], None, []))


def apply_from_page(web: Web, llm_url: str, key: str = "", model: str = "session-chat", timeout: float = 30) -> list:
    """The Settings tab's Apply (llm url, model, vision model, key, embedding provider, model, url, key,
    OCR engine, timeout, session profile)."""
    return outputs(
        web.queue(
            "settings_apply",
            llm_url,
            model,
            "",
            key,
            "sentence_transformers",
            "bundled:multilingual-e5-small",
            "",
            "",
            "rapidocr",
            timeout,
            None,
        )
    )


def bearer(request) -> str:
    return request.header("Authorization") or ""


def test_a_session_model_gets_no_operator_key_and_changes_nobody_else(indexed: RunningApp) -> None:
    operator_fake = indexed.fake
    with FakeOpenAI() as elsewhere:
        visitor, other = Web(indexed.url), Web(indexed.url)
        status = apply_from_page(visitor, elsewhere.base_url)[0]
        assert "session" in status, status
        ask_from_page(visitor, "What is the key formula?")
        sent = elsewhere.chat_requests()
        assert sent, "the visitor's own endpoint answers the visitor"
        assert all(OPERATOR_KEY not in bearer(r) for r in elsewhere.requests), "the operator's key moved"
        before = len(operator_fake.chat_requests())
        ask_from_page(other, "What is the key formula?")
        assert len(operator_fake.chat_requests()) > before, "another session still uses the server's model"
        assert bearer(operator_fake.last_chat()) == f"Bearer {OPERATOR_KEY}"
        assert all(r.body.get("model") != "session-chat" for r in operator_fake.chat_requests())


@pytest.mark.parametrize(
    "url, timeout, variable, value",
    [("not a url", 30, "DOCLENS_LLM_BASE_URL", "not a url"), ("", -1, "DOCLENS_LLM_TIMEOUT", "-1")],
)
def test_settings_are_checked_like_the_config_file(
    indexed: RunningApp, url: str, timeout: float, variable: str, value: str
) -> None:
    status = apply_from_page(Web(indexed.url), url, timeout=timeout)[0]
    with pytest.raises(SettingsError) as from_config:
        load_settings(environ={variable: value})
    assert str(from_config.value) in status and "Applied" not in status, status


@pytest.fixture(scope="module")
def admin_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """A second app with two logins, alice being the operator (``--admin alice``)."""
    data_dir = tmp_path_factory.mktemp("admin-data")
    log_path = data_dir.parent / "admin-app.log"
    port = free_port()
    with FakeOpenAI() as fake, open(log_path, "w", encoding="utf-8") as log_file:
        env = {**app_environment(data_dir, fake), "DOCLENS_AUTH": "alice:wonder bob:builder"}
        process = subprocess.Popen(
            [sys.executable, "main.py", "serve", "--port", str(port), "--admin", "alice"],
            cwd=REPO_ROOT,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until_serving(f"http://127.0.0.1:{port}/", process, log_path)
            yield RunningApp(f"http://127.0.0.1:{port}", fake, log_path, data_dir, upload_dir_for(data_dir))
        finally:
            process.terminate()
            process.wait(timeout=60)


def test_only_the_admin_changes_the_server_and_a_key_stays_with_its_endpoint(admin_app: RunningApp) -> None:
    alice, bob = Web(admin_app.url), Web(admin_app.url)
    alice.login("alice", "wonder")
    bob.login("bob", "builder")
    # the settings form as each session sees it (written again by the language switch)
    scope = outputs(bob.queue("switch_settings", None))
    assert "session only" in scope[0] and scope[1] == admin_app.fake.base_url
    with FakeOpenAI() as elsewhere:
        assert "session" in apply_from_page(bob, elsewhere.base_url)[0]
        scope = outputs(alice.queue("switch_settings", None))
        assert "operator" in scope[0] and scope[1] == admin_app.fake.base_url, "bob changed only his session"
        status = apply_from_page(alice, elsewhere.base_url, model="new-server-model")[0]
        assert "this server" in status, status
        carol = Web(admin_app.url)  # a new session of the other login sees the server's new endpoint
        carol.login("bob", "builder")
        assert outputs(carol.queue("switch_settings", None))[1] == elsewhere.base_url
        before = len(elsewhere.requests)
        # the server's model now, as the form shows it: the new endpoint...
        outputs(alice.queue("settings_test_llm", elsewhere.base_url, "new-server-model", "", "", None, None))
        assert len(elsewhere.requests) > before
        assert all(OPERATOR_KEY not in bearer(r) for r in elsewhere.requests), "...without the old one's key"


# ---------------------------------------------------------------- issue 12 item 13: user errors, one log line


def test_user_errors_through_the_api_log_one_line(indexed: RunningApp) -> None:
    web = Web(indexed.url)
    offset = log_size(indexed)
    assert web.call("upload", KB, [])[0] == "error"
    assert web.call("ask", "no-such-kb", "anything?", "")[0] == "error"
    time.sleep(0.5)
    written = log_since(indexed, offset)
    assert "Traceback" not in written, written
    assert written.count("\n") <= 4 and "refused" in written, written
