irdl.dialect @hivm {
}
