/**
 * The icon of the viewer and the docs: a small tree of three nodes, as SVG, so no binary file is
 * needed. Browsers that ask for /favicon.ico by habit get the same picture.
 */
export const FAVICON_PATH = "/favicon.svg";

export const faviconSvg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#2557d6"/>
<path d="M10 9v14M10 16h9a3 3 0 0 0 3-3v-2" fill="none" stroke="#fff" stroke-width="2.5" stroke-linecap="round"/>
<circle cx="10" cy="8" r="3.2" fill="#fff"/>
<circle cx="10" cy="24" r="3.2" fill="#fff"/>
<circle cx="22" cy="10" r="3.2" fill="#4cc988"/>
</svg>
`;
