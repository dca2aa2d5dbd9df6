() => {
  // [n] citations in an answer open source n's page preview: they click that row of the sources table.
  document.addEventListener('click', (event) => {
    const cite = event.target.closest ? event.target.closest('#chatbot .dl-cite') : null;
    if (!cite) return;
    const number = parseInt(cite.textContent.replace(/\D/g, ''), 10);
    const rows = document.querySelectorAll('#sources tbody tr');
    if (number >= 1 && rows[number - 1]) {
      rows[number - 1].click();
      event.preventDefault();
    }
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && event.target.classList && event.target.classList.contains('dl-cite')) {
      event.target.click();
    }
  });
}
