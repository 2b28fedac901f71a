/**
 * The run view's diagram/list toggle, exposed as toggle buttons: `aria-pressed` on each.
 *
 * ipywidgets' buttons carry no ARIA state of their own. The kernel's run view marks its
 * toggle's buttons `skillnb-toggle` and the pressed one `skillnb-pressed` (see
 * `skillnb/jupyter/views/widgets.py`); `syncPressed` turns those classes into `aria-pressed`,
 * and the live view renderer calls it whenever a class changes inside the widget.
 */

/** The class of the toggle's buttons. */
export const TOGGLE_CLASS = 'skillnb-toggle';
/** The class of the pressed one. */
export const PRESSED_CLASS = 'skillnb-pressed';

/** What `syncPressed` needs of a button. */
export interface IToggleNode {
  classList: { contains(name: string): boolean };
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
}

/** What `syncPressed` needs of the node holding the buttons. */
export interface IToggleRoot {
  querySelectorAll(selector: string): Iterable<IToggleNode>;
}

/** Set `aria-pressed` on every toggle button under `root` (only where it changes). */
export function syncPressed(root: IToggleRoot): void {
  for (const button of root.querySelectorAll(`.${TOGGLE_CLASS}`)) {
    const pressed = button.classList.contains(PRESSED_CLASS) ? 'true' : 'false';
    if (button.getAttribute('aria-pressed') !== pressed) {
      button.setAttribute('aria-pressed', pressed);
    }
  }
}
