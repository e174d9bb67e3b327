# procmail: one delivery is all-or-nothing.
description "Each procmail run (one message delivered to its folders) is one transaction: the message reaches every folder its recipes name, copies included, or none when a delivery fails or procmail is killed. A failed delivery (status 75 or 73: the sender retries) leaves no copy behind to be duplicated by the retry."

on exec procmail do begin
on exit do commit-if status == 0
