irdl.dialect @cce {
}
