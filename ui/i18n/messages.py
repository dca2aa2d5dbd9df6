"""Backend messages (errors, answer notices) in the user's language.

The backend speaks English, one line per error. The Chinese UI maps the messages a user can cause to
Chinese by pattern; a message without a pattern keeps its English text behind a Chinese lead-in, so the
user still sees the exact reason.
"""

from __future__ import annotations

import re

from ui.i18n.strings import text

# (English pattern, Chinese template with the same named groups)
_ERRORS_ZH: list[tuple[re.Pattern[str], str]] = [
    (re.compile(p), zh)
    for p, zh in [
        (r"^knowledge base name is empty$", "知识库名称为空"),
        (r"^knowledge base '(?P<a>.*)' does not exist$", "知识库“{a}”不存在"),
        (r"^knowledge base '(?P<a>.*)' already exists$", "知识库“{a}”已存在"),
        (r"^knowledge base '(?P<a>.*)' already has that name$", "知识库“{a}”已经是这个名称"),
        (
            r"^cannot rename '(?P<a>.*)': knowledge base '(?P<b>.*)' already exists$",
            "无法重命名“{a}”：知识库“{b}”已存在",
        ),
        (
            r"^knowledge base name '(?P<a>.*)' is (?P<n>\d+) characters; at most (?P<m>\d+) are allowed$",
            "知识库名称“{a}”有 {n} 个字符；最多允许 {m} 个",
        ),
        (r"^knowledge base name (?P<a>.*) contains control characters$", "知识库名称 {a} 含有控制字符"),
        (
            r"^knowledge base name '(?P<a>.*)' is too long in bytes for a collection name; use fewer characters$",
            "知识库名称“{a}”按字节计过长；请使用更少的字符",
        ),
        (r"^document '(?P<a>.*)' is not in knowledge base '(?P<b>.*)'$", "文档“{a}”不在知识库“{b}”中"),
        (r"^figure '(?P<a>.*)' is not in knowledge base '(?P<b>.*)'$", "图表“{a}”不在知识库“{b}”中"),
        (
            r"^knowledge base '(?P<a>.*)' has no documents yet: upload PDFs first$",
            "知识库“{a}”还没有文档：请先上传 PDF",
        ),
        (
            r"^knowledge base '(?P<a>.*)' has no chunks to test: upload PDFs first$",
            "知识库“{a}”没有可测试的分块：请先上传 PDF",
        ),
        (r"^the question is empty$", "问题为空"),
        (
            r"^(?P<a>.*): the original PDF is not kept for this document; upload it again$",
            "{a}：未保留该文档的原始 PDF；请重新上传",
        ),
        (r"^no PDF files found in (?P<a>.*)$", "在 {a} 中没有找到 PDF 文件"),
        (
            r"^(?P<a>.*): a file was not received by this server's upload: .*$",
            "{a}：不是经由本服务器的上传接收的文件：请通过页面或 gradio_client.handle_file 上传 PDF",
        ),
        (
            r"^cannot create '(?P<a>.*)': knowledge base '(?P<b>.*)' already exists, and names that differ only in "
            r"case .*$",
            "无法创建“{a}”：知识库“{b}”已存在，仅大小写（或全角半角）不同的名称无法区分；请换一个名称",
        ),
        (
            r"^cannot rename '(?P<a>.*)' to '(?P<c>.*)': knowledge base '(?P<b>.*)' already exists, and names that "
            r"differ only in case .*$",
            "无法将“{a}”重命名为“{c}”：知识库“{b}”已存在，仅大小写（或全角半角）不同的名称无法区分；请换一个名称",
        ),
        (r"^(?P<a>.*): cancelled; nothing was stored$", "{a}：已取消；未存储任何内容"),
        (r"^(?P<a>.*): interrupted; nothing was stored$", "{a}：已中断；未存储任何内容"),
        (
            r"^(?P<a>.*): the same content is already indexed as (?P<b>.*); skipped$",
            "{a}：相同内容已作为“{b}”索引；已跳过",
        ),
        (r"^(?P<a>.*): the same content is already indexed; skipped$", "{a}：相同内容已索引；已跳过"),
        (r"^(?P<a>.*): not a PDF \((?P<kind>.*)\)$", "{a}：不是 PDF（{kind}）"),
        (
            r"^Connected to (?P<a>\S+): (?P<kind>model|vision model) (?P<m>.*) answered in (?P<t>\d+) ms\.$",
            "已连接 {a}：{kind} {m} 在 {t} 毫秒内应答。",
        ),
        (
            r"^cannot restore '(?P<a>.*)' from the trash as '(?P<c>.*)': knowledge base '(?P<b>.*)' already exists.*$",
            "无法将“{a}”从回收站恢复为“{c}”：知识库“{b}”已存在；请换一个名称",
        ),
        (
            r"^cannot restore '(?P<a>.*)' into '(?P<b>.*)': a document of that name is there now; delete that one first$",
            "无法将“{a}”恢复到“{b}”：那里已有同名文档；请先删除它",
        ),
        (r"^'(?P<a>.*)' is not in the trash \(`trash list` shows what is\)$", "“{a}”不在回收站中"),
        (
            r"^document '(?P<a>.*)' is still being added to '(?P<b>.*)'; delete it once indexed$",
            "文档“{a}”仍在添加到“{b}”；请在索引完成后再删除",
        ),
        (r"^QA file not found in the bench folder: (?P<a>.*)$", "评测文件夹中找不到问答文件：{a}"),
        (r"^PDF folder not found in the bench folder: (?P<a>.*)$", "评测文件夹中找不到 PDF 文件夹：{a}"),
    ]
]

_NOTICES_ZH: list[tuple[re.Pattern[str], str]] = [
    (re.compile(p), zh)
    for p, zh in [
        (
            r"^Your documents do not seem to hold the answer to this question \(confidence (?P<a>\d+)%\)\. "
            r"The closest passages follow: closest, not an answer\.$",
            "您的文档中似乎没有这个问题的答案（置信度 {a}%）。下面是最接近的段落：只是最接近的内容，并非答案。",
        ),
        (
            r"^No document named \"(?P<a>.*)\" was searched, so the answer to this question is not in your "
            r"documents \(confidence (?P<b>\d+)%\)\. The closest passages follow: closest, not an answer\.$",
            "没有检索到名为“{a}”的文档，因此您的文档中没有这个问题的答案（置信度 {b}%）。下面是最接近的段落：只是最接近的内容，并非答案。",
        ),
        (
            r"^No language model is configured, so this answer quotes the most relevant passages\.$",
            "未配置语言模型，因此本回答引用最相关的段落。",
        ),
        (
            r"^The language model failed \((?P<a>.*)\), so this answer quotes the most relevant passages\.$",
            "语言模型出错（{a}），因此本回答引用最相关的段落。",
        ),
        (
            r"^The model cited sources that do not exist \((?P<a>.*)\); those citations were removed\.$",
            "模型引用了不存在的来源（{a}）；这些引用已删除。",
        ),
        (
            r"^The documents in this knowledge base contain no passage that matches the question\.$",
            "此知识库的文档中没有与问题匹配的段落。",
        ),
    ]
]

# What a message's {kind} says (pdf_checks._guess_kind, LLMClient.check_connection).
_KINDS_ZH = {
    "it looks like plain text": "看起来是纯文本",
    "unknown binary content": "未知的二进制内容",
    "it is a PNG image": "这是 PNG 图片",
    "it is a JPEG image": "这是 JPEG 图片",
    "it is a GIF image": "这是 GIF 图片",
    "it is a ZIP archive, e.g. a Word or Excel file": "这是 ZIP 压缩包，例如 Word 或 Excel 文件",
    "it is an old Office file": "这是旧版 Office 文件",
    "it is an RTF document": "这是 RTF 文档",
    "it is a TIFF image": "这是 TIFF 图片",
    "model": "模型",
    "vision model": "视觉模型",
}
# The lead-in of an answer about a figure (answering.figures.figure_label).
_FIGURE_LEAD = re.compile(r"^About figure p(?P<page>\d+) of (?P<file>.*?):(?=\n|$)")

# The actions named in "could not <action>" lines.
ACTIONS_ZH = {
    "answer the question": "回答问题",
    "create the knowledge base": "创建知识库",
    "list knowledge bases": "列出知识库",
    "rename the knowledge base": "重命名知识库",
    "delete the knowledge base": "删除知识库",
    "list documents": "列出文档",
    "delete the document": "删除文档",
    "add the documents": "添加文档",
    "run the self-test": "运行自测",
    "run the evaluation": "运行评测",
    "summarise the document": "生成文档摘要",
    "show the page": "显示页面",
    "list figures": "列出图表",
    "apply the settings": "应用设置",
    "test the connection": "测试连接",
    "restore from the trash": "从回收站恢复",
    "empty the trash": "清空回收站",
    "list the trash": "列出回收站",
    "search the documents": "检索文档",
}


def translate_error(message: str, lang: str) -> str:
    if lang != "zh":
        return message
    return _translate(message, _ERRORS_ZH) or text(lang, "error: {m}", "错误：{m}").format(m=message)


def translate_notice(notice: str, lang: str) -> str:
    if lang != "zh" or not notice:
        return notice
    return _translate(notice, _NOTICES_ZH) or text(lang, "note: {m}", "提示：{m}").format(m=notice)


def translate_result(message: str, lang: str) -> str:
    """A message that reports a success (a connection test, a skipped duplicate): its Chinese form if
    there is one, else the message as it is (no "error" lead-in)."""
    if lang != "zh":
        return message
    return _translate(message, _ERRORS_ZH) or message


def translate_figure_lead(answer: str, lang: str) -> str:
    """ "About figure p2 of x.pdf:" opening an answer about a figure, in the user's language."""
    if lang != "zh":
        return answer
    return _FIGURE_LEAD.sub(lambda m: f"关于 {m.group('file')} 第 {m.group('page')} 页的图表：", answer, count=1)


def _translate(message: str, table: list[tuple[re.Pattern[str], str]]) -> str:
    for pattern, zh in table:
        match = pattern.match(message.strip())
        if match:
            groups = {
                name: (_KINDS_ZH.get(value, value) if name == "kind" else value)
                for name, value in match.groupdict().items()
            }
            return zh.format(**groups)
    return ""
