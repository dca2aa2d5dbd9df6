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
  new MutationObserver(() => {
    if (!labelling) {
      labelling = true;
      requestAnimationFrame(plainLabels);
    }
  }).observe(document.body, { childList: true, subtree: true, characterData: true, attributeFilter: ['aria-label'] });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && event.target.classList && event.target.classList.contains('dl-cite')) {
      event.target.click();
    }
  });
}
