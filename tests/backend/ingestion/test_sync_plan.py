"""The sync plan as a pure function: a folder's files (path, digest) and the registry's documents in,
add / replace / rename / remove out. Real PDFs only where a folder is listed."""

from __future__ import annotations

from pathlib import Path

from backend.ingestion.sync_plan import FolderFile, HashCache, document_names, list_folder, plan_sync
from backend.ingestion.uploads import file_sha256
from backend.types import DocumentInfo
from tests.support.text_pdf import write_text_pdf


def file(relative: str, sha: str) -> FolderFile:
    return FolderFile(relative, Path("/folder") / relative, sha)


def doc(name: str, sha: str) -> DocumentInfo:
    return DocumentInfo(sha[:32], name, sha, pages=1, ocr_pages=0, chunks=3, figures=0, status="complete")


def kinds(plan) -> list[tuple[str, str, str]]:
    return sorted((a.kind, a.name, a.old_name) for a in plan.actions)


def test_new_changed_renamed_and_missing_files():
    documents = [doc("a.pdf", "1" * 64), doc("b.pdf", "2" * 64), doc("c.pdf", "3" * 64), doc("d.pdf", "4" * 64)]
    files = [file("a.pdf", "1" * 64), file("b.pdf", "9" * 64), file("sub/c2.pdf", "3" * 64), file("e.pdf", "5" * 64)]
    plan = plan_sync(files, documents)
    assert kinds(plan) == [
        ("add", "e.pdf", ""),
        ("remove", "d.pdf", "d.pdf"),
        ("rename", "c2.pdf", "c.pdf"),
        ("replace", "b.pdf", "b.pdf"),
        ("unchanged", "a.pdf", "a.pdf"),
    ]
    assert [a.kind for a in plan.changes] == ["remove", "rename", "replace", "add"]  # the order applied in


def test_the_same_folder_twice_is_in_sync():
    files = [file("2023/report.pdf", "1" * 64), file("2024/report.pdf", "2" * 64)]
    first = plan_sync(files, [])
    assert kinds(first) == [("add", "report (2).pdf", ""), ("add", "report.pdf", "")]
    documents = [doc(a.name, a.source.sha256) for a in first.actions]
    again = plan_sync(files, documents)
    assert again.in_sync and {a.kind for a in again.actions} == {"unchanged"}


def test_subfolder_names_follow_ingest_and_stay_put():
    """As ``ingest`` of a folder: the file's own name, the second of a name numbered; a real file named
    like a number is never taken over."""
    files = [file("2023/report.pdf", "1"), file("2024/report.pdf", "2"), file("z/report (2).pdf", "3")]
    assert document_names(files) == {
        "2023/report.pdf": "report.pdf",
        "2024/report.pdf": "report (3).pdf",
        "z/report (2).pdf": "report (2).pdf",
    }


def test_swapped_contents_are_two_renames_not_two_replacements():
    documents = [doc("a.pdf", "1" * 64), doc("b.pdf", "2" * 64)]
    plan = plan_sync([file("a.pdf", "2" * 64), file("b.pdf", "1" * 64)], documents)
    assert kinds(plan) == [("rename", "a.pdf", "b.pdf"), ("rename", "b.pdf", "a.pdf")]


def test_moved_away_and_new_content_under_the_old_name():
    """a.pdf moved to b.pdf and a new a.pdf written: a rename and an addition, the old vectors kept."""
    plan = plan_sync([file("a.pdf", "2" * 64), file("b.pdf", "1" * 64)], [doc("a.pdf", "1" * 64)])
    assert kinds(plan) == [("add", "a.pdf", ""), ("rename", "b.pdf", "a.pdf")]


def test_a_copy_of_a_file_is_one_document():
    plan = plan_sync([file("a.pdf", "1" * 64), file("copy/a-copy.pdf", "1" * 64)], [])
    assert kinds(plan) == [("add", "a.pdf", ""), ("duplicate", "a-copy.pdf", "")]
    assert plan.of("duplicate")[0].detail == "the same content as a.pdf"


def test_an_unreadable_file_keeps_its_document():
    plan = plan_sync([file("a.pdf", "")], [doc("a.pdf", "1" * 64)])
    assert kinds(plan) == [("unreadable", "a.pdf", "a.pdf")]
    assert plan.in_sync


def test_an_empty_folder_removes_everything_in_the_plan():
    """(``DocLens.sync`` refuses to carry it out: tests/backend/ingestion/test_sync.py.)"""
    plan = plan_sync([], [doc("a.pdf", "1" * 64)])
    assert kinds(plan) == [("remove", "a.pdf", "a.pdf")]


def test_listing_hashes_real_files_once_while_they_do_not_change(tmp_path):
    folder = tmp_path / "papers"
    (folder / "sub").mkdir(parents=True)
    write_text_pdf(folder / "sub" / "b.pdf", [["granite"]])
    write_text_pdf(folder / "a.PDF", [["basalt"]])
    (folder / "notes.txt").write_text("not a pdf")
    hashes = HashCache()
    listed = list_folder(folder, hashes)
    assert [(f.relative, f.sha256) for f in listed] == [
        ("a.PDF", file_sha256(folder / "a.PDF")),
        ("sub/b.pdf", file_sha256(folder / "sub" / "b.pdf")),
    ]
    assert list_folder(folder, hashes) == listed
    write_text_pdf(folder / "a.PDF", [["basalt, changed"]])
    assert list_folder(folder, hashes)[0].sha256 == file_sha256(folder / "a.PDF")
