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

/**
 * The side panel's icon: a notebook page with a passed gate (a check) over a two-state
 * chain. Its title names it for screen readers and tooltips.
 */
const RUN_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24" role="img" aria-label="SKILL.nb">
  <title>SKILL.nb</title>
  <path class="jp-icon3" fill="none" stroke="#616161" stroke-width="1.8" stroke-linejoin="round" d="M5 2.9h9.6L19 7.3v13.8H5z"/>
  <path class="jp-icon3" fill="none" stroke="#616161" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round" d="M8.2 9.6l2.2 2.2 4.6-4.8M10.4 16.6h3.2"/>
  <circle class="jp-icon3" fill="#616161" cx="8.4" cy="16.6" r="2"/>
  <circle class="jp-icon3" fill="#616161" cx="15.6" cy="16.6" r="2"/>
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

/** The side panel's tab icon (labelled "SKILL.nb"). */
export const runIcon = new LabIcon({ name: 'skillnb:run', svgstr: RUN_SVG });
