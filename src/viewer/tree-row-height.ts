/**
 * Tree rows have one fixed height, in pixels: the stylesheet draws them at it and the virtual
 * list places and counts them by it.
 */
export const TREE_ROW_HEIGHT = 28;
