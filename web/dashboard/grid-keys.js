// Arrow keys between the tiles of the grid (Home and End to the first and last), as in a file
// manager; Tab still goes through every control in order.

const KEYS = new Set(['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End']);

export function moveBetweenTiles(event) {
  if (!KEYS.has(event.key)) return;
  const tiles = [...event.currentTarget.querySelectorAll('.tile-open')];
  const from = tiles.indexOf(document.activeElement);
  if (from < 0) return;
  const perRow = Math.max(1, tiles.filter((tile) => tile.offsetTop === tiles[0].offsetTop).length);
  const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -perRow, ArrowDown: perRow }[event.key];
  const to = event.key === 'Home' ? 0 : event.key === 'End' ? tiles.length - 1 : from + step;
  if (to < 0 || to >= tiles.length) return;
  event.preventDefault();
  tiles[to].focus();
}
