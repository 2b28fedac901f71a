/**
 * The extension's icons (inline SVG, no external assets).
 */
import { LabIcon } from '@jupyterlab/ui-components';

const FLAG_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M5 3h2v18H5zM8 4h10l-2.5 4L18 12H8z"/>
</svg>`;

const RESUME_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M12 4a8 8 0 1 1-7.4 5h2.2A6 6 0 1 0 12 6v3L7.5 5 12 1z"/>
</svg>`;

const RUN_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M4 4h7v7H4zm9 0h7v7h-7zM4 13h7v7H4zm11 1.5 2-1.5 4 5-4 4-2-1.5 2.5-2.5z"/>
</svg>`;

/** The Milestone button's icon (a flag). */
export const milestoneIcon = new LabIcon({
  name: 'skillnb:milestone',
  svgstr: FLAG_SVG
});

/** The Resume button's icon (a circular arrow). */
export const resumeIcon = new LabIcon({
  name: 'skillnb:resume',
  svgstr: RESUME_SVG
});

/** The side panel's tab icon. */
export const runIcon = new LabIcon({ name: 'skillnb:run', svgstr: RUN_SVG });
