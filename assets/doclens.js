() => {
  // [n] citations in an answer open source n of THAT answer: the citation's class names the answer
  // (dl-answer-K); its reference "K:n" goes to a hidden box and a hidden button asks the server (ui/chat_page.py).
  const openCitation = (cite) => {
    const number = parseInt(cite.textContent.replace(/\D/g, ''), 10);
    const answer = [...cite.classList].map((c) => /^dl-answer-(\d+)$/.exec(c)).find(Boolean);
    const box = document.querySelector('#cite-reference textarea, #cite-reference input');
    const button = document.querySelector('#cite-open');
    if (!(number >= 1) || !answer || !box || !button) return false;
    box.value = `${answer[1]}:${number}`;
    box.dispatchEvent(new Event('input', { bubbles: true }));
    setTimeout(() => button.click(), 0);  // after the box's new value reached Gradio
    return true;
  };
  document.addEventListener('click', (event) => {
    const cite = event.target.closest ? event.target.closest('#chatbot .dl-cite') : null;
    if (cite && openCitation(cite)) event.preventDefault();
  });
  // Gradio labels each chat bubble with its message's source ("user's message: <span class=…>"), so a
  // screen reader read markup: the label says the bubble's shown text instead (once per frame at most).
  const LABELLED = /^(.*?'s message: )/;
  let labelling = false;
  const plainLabels = () => {
    labelling = false;
    document.querySelectorAll('#chatbot [aria-label*="\'s message: "]').forEach((bubble) => {
      const prefix = LABELLED.exec(bubble.getAttribute('aria-label') || '');
      const label = prefix && prefix[1] + bubble.innerText.replace(/\s+/g, ' ').trim();
      if (label && bubble.getAttribute('aria-label') !== label) bubble.setAttribute('aria-label', label);
    });
  };
  // Gradio draws some of its own strings once, in the locale of that moment (the upload box, the footer),
  // and one never in any locale (the upload's file-type refusal): after an in-place language switch
  // (ui/i18n/strings.py) these follow the language chosen on the page.
  const GRADIO_STRINGS = [
    ['Drop File Here', '将文件拖放到此处'],
    ['- or -', '- 或 -'],
    ['Click to Upload', '点击上传'],
    ['Use via API', '通过 API 使用'],
  ];
  const REFUSED_TYPE = /^Invalid file types?: (.*)\. Only (.*) allowed\.$/;
  const REFUSED_TYPE_ZH = /^文件类型无效：(.*)。仅允许 (.*)。$/;
  const inLanguage = (shown, lang) => {
    const trimmed = shown.trim();
    for (const [en, zh] of GRADIO_STRINGS) {
      if (trimmed === (lang === 'zh' ? en : zh)) return shown.replace(trimmed, lang === 'zh' ? zh : en);
    }
    const refused = (lang === 'zh' ? REFUSED_TYPE : REFUSED_TYPE_ZH).exec(trimmed);
    if (!refused) return null;
    return lang === 'zh' ? `文件类型无效：${refused[1]}。仅允许 ${refused[2]}。` : `Invalid file type: ${refused[1]}. Only ${refused[2]} allowed.`;
  };
  let translating = false;
  const followLanguage = () => {
    translating = false;
    const lang = document.documentElement.dataset.doclensLanguage;
    if (lang !== 'zh' && lang !== 'en') return;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const shown = node.data.length < 400 ? inLanguage(node.data, lang) : null;
      if (shown !== null && shown !== node.data) node.data = shown;
    }
  };
  new MutationObserver(() => {
    if (!translating) {
      translating = true;
      requestAnimationFrame(followLanguage);
    }
  }).observe(document.documentElement, { attributeFilter: ['data-doclens-language'] });
  new MutationObserver(() => {
    if (!labelling) {
      labelling = true;
      requestAnimationFrame(plainLabels);
    }
    if (!translating) {
      translating = true;
      requestAnimationFrame(followLanguage);
    }
  }).observe(document.body, { childList: true, subtree: true, characterData: true, attributeFilter: ['aria-label'] });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && event.target.classList && event.target.classList.contains('dl-cite')) {
      event.target.click();
    }
  });
}
