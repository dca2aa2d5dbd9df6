"""The facade's calls that list, create, read and share knowledge bases, each checked against the caller's
role (``backend.knowledge_bases.roles``). ``backend.service.DocLens`` inherits them; ``who`` is the login
(``local`` without logins, ``cli`` for the command line), as for the audited changes."""

from __future__ import annotations

from typing import Optional, Sequence

from backend.knowledge_bases.audit import LOCAL
from backend.knowledge_bases.lifecycle import KnowledgeBases
from backend.knowledge_bases.names import name_list
from backend.knowledge_bases.open_kb import OpenKB
from backend.knowledge_bases.roles import Role, Roles
from backend.knowledge_bases.trash import Trash
from backend.types import DocumentInfo, DocumentPage, Figure, KnowledgeBase


class LibraryAccess:
    kbs: KnowledgeBases
    roles: Roles
    trash: Trash  # its audit log records the shares

    def list_kbs(self, who: str = LOCAL) -> list[KnowledgeBase]:
        """The knowledge bases ``who`` may read."""
        return [kb for kb in self.kbs.list() if self.roles.role(who, kb.name) >= Role.READER]

    def has_kbs(self) -> bool:
        """Whether any knowledge base exists (a fresh install has none), whoever may read it."""
        return bool(self.kbs.list())

    def create_kb(self, name: str, who: str = LOCAL) -> KnowledgeBase:
        """A new knowledge base, owned by ``who`` when the app has logins."""
        created = self.kbs.create(name)
        self.roles.created(created.name, who)
        return created

    def readable(self, kb_names: str | Sequence[str], who: str) -> list[str]:
        """The names asked (one or a list, once each), each one that ``who`` may read, or AccessDenied."""
        names = list(dict.fromkeys(name_list(kb_names)))
        for name in names:
            self.roles.require(who, name, Role.READER)
        return names

    def open_kb(self, name: str, check_model: bool = True) -> OpenKB:
        return self.kbs.open(name, check_model=check_model)

    def documents(self, kb_name: str, who: str = LOCAL) -> list[DocumentInfo]:
        self.roles.require(who, kb_name, Role.READER)
        return self.open_kb(kb_name, check_model=False).registry.documents()

    def has_document(self, kb_name: str, file: str, who: str = LOCAL) -> bool:
        """Whether the knowledge base holds a document of that exact name (one lookup, any library size)."""
        self.roles.require(who, kb_name, Role.READER)
        return self.open_kb(kb_name, check_model=False).registry.document_by_file(file) is not None

    def documents_page(self, kb_name: str, asked: DocumentPage, who: str = LOCAL) -> DocumentPage:
        self.roles.require(who, kb_name, Role.READER)
        return self.open_kb(kb_name, check_model=False).documents_page(asked)

    def figures(self, kb_name: str, file: Optional[str] = None, who: str = LOCAL) -> list[Figure]:
        self.roles.require(who, kb_name, Role.READER)
        kb = self.open_kb(kb_name, check_model=False)
        doc_id = kb.find_document(file).doc_id if file else None
        return kb.registry.figures(doc_id)

    def figure(self, kb_name: str, figure_id: str, who: str = LOCAL) -> Figure:
        self.roles.require(who, kb_name, Role.READER)
        return self.open_kb(kb_name, check_model=False).figure(figure_id)

    def role(self, kb_name: str, who: str = LOCAL) -> str:
        """``who``'s role on the knowledge base: owner, editor, reader or none (what the UI offers)."""
        return self.roles.role(who, kb_name).name.lower()

    def access(self, kb_name: str, who: str = LOCAL) -> dict:
        """Its owner and shares ({login or "*": "reader"|"editor"}), for whoever may read it."""
        self.roles.require(who, kb_name, Role.READER)
        return self.roles.grant(kb_name)

    def share(self, kb_name: str, with_whom: str, role: str, who: str = LOCAL) -> dict:
        """Share a knowledge base with a login (or "*", everyone) as reader or editor, or take it back
        ("none"). Only its owner and the admin may; the change goes to the audit log."""
        self.roles.require(who, kb_name, Role.OWNER)
        self.kbs.open(kb_name, check_model=False)  # it exists
        shared = self.roles.share(kb_name, with_whom, role)
        self.trash.audit.record(who, "share_kb", kb=kb_name.strip(), to=with_whom.strip(), role=role.strip().lower())
        return shared
